-- fib_hub.lua — a hub process fans requests out to worker processes (the "FibHub"
-- of the Guild / Ractor talk, seed 002), talking only through mailboxes.
--
--   main  --("req", n)-->  hub  --(n)-->  idle worker
--   main  <--(n, fib n)--  hub  <--("ans", worker, n, fib n)--  worker
--
-- The hub keeps a list of idle workers and a queue of requests waiting for one, so a
-- slow request never holds up the others (load balancing). At the end it prints how
-- many requests each worker served.
--
--   lutra examples/fib_hub.lua [n] [requests] [workers]
--
-- Defaults: fib(24), 240 requests, one worker per core (at least 2).

local n, requests, workers = ...

n = math.tointeger(tonumber(n)) or 24
requests = math.tointeger(tonumber(requests)) or 240
workers = math.tointeger(tonumber(workers)) or math.max(lutra.workers(), 2)

-- A worker: computes fib of each number it receives, answers the hub, stops on "stop".
local function worker(hub)
  local function fib(k)
    if k < 2 then return k end
    return fib(k - 1) + fib(k - 2)
  end
  local served = 0
  while true do
    local k = lutra.receive()
    if k == "stop" then return served end
    hub:send("ans", lutra.self(), k, fib(k))
    served = served + 1
  end
end

-- The hub: starts the workers, hands each request to an idle worker (or queues it),
-- sends every answer on to `client`; on "stop" stops the workers and returns what
-- each one served.
local function hub(client, worker, count)
  local me = lutra.self()
  local idle, all = {}, {}
  for i = 1, count do
    all[i] = lutra.spawn(worker, me)
    idle[i] = all[i]
  end
  local waiting, first = {}, 1
  while true do
    local cmd, a, b, c = lutra.receive()
    if cmd == "req" then
      local w = table.remove(idle)
      if w then w:send(a) else waiting[#waiting + 1] = a end
    elseif cmd == "ans" then
      client:send(b, c)
      if first <= #waiting then
        a:send(waiting[first])
        waiting[first] = nil
        first = first + 1
      else
        idle[#idle + 1] = a
      end
    elseif cmd == "stop" then
      local served = {}
      for i, w in ipairs(all) do
        w:send("stop")
        served[i] = w:join()
      end
      return served
    end
  end
end

print(string.format("fib_hub.lua: fib(%d) x %d requests, %d workers", n, requests, workers))
local t0 = lutra.now()
local h = lutra.spawn(hub, lutra.self(), worker, workers)
for _ = 1, requests do h:send("req", n) end

local sum, expected = 0, nil
for _ = 1, requests do
  local k, value = lutra.receive()
  assert(k == n)
  expected = expected or value
  assert(value == expected, "workers disagree")
  sum = sum + value
end
h:send("stop")
local served = h:join()
local elapsed = lutra.now() - t0

print(string.format("fib(%d) = %d; %d answers, sum %d", n, expected, requests, sum))
for i, count in ipairs(served) do
  print(string.format("  worker %2d served %4d requests", i, count))
end
print(string.format("elapsed %.2f s", elapsed))
