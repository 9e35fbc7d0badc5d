-- Seed 002's FibHub: the main process sends `requests` requests for fib(n) to a hub
-- process, which hands each to an idle worker process (or queues it) and forwards
-- the answers. With mode "serial", the same fib(n) calls in a plain loop (the seed's
-- serial version).
--   lutra fib_hub.lua hub|serial [n] [requests] [workers]      lua5.4 fib_hub.lua ...
if not lutra then dofile((arg and arg[0] or ""):match("^(.-)[^/]*$") .. "shim.lua") end

local mode, n, requests, workers = ...
n = math.tointeger(tonumber(n)) or 20
requests = math.tointeger(tonumber(requests)) or 1000
workers = math.tointeger(tonumber(workers)) or 2

local function fib(k)
  if k < 2 then return k end
  return fib(k - 1) + fib(k - 2)
end

local function worker(hub)
  local function fib(k)
    if k < 2 then return k end
    return fib(k - 1) + fib(k - 2)
  end
  local me = lutra.self()
  while true do
    local k = lutra.receive()
    if k == "stop" then return end
    hub:send("ans", me, fib(k))
  end
end

local function hub(client, worker, count)
  local me = lutra.self()
  local idle, all, waiting, first = {}, {}, {}, 1
  for i = 1, count do
    all[i] = lutra.spawn(worker, me)
    idle[i] = all[i]
  end
  while true do
    local cmd, a, b = lutra.receive()
    if cmd == "req" then
      local w = table.remove(idle)
      if w then w:send(a) else waiting[#waiting + 1] = a end
    elseif cmd == "ans" then
      client:send(b)
      if first <= #waiting then
        a:send(waiting[first])
        waiting[first] = nil
        first = first + 1
      else
        idle[#idle + 1] = a
      end
    else
      for _, w in ipairs(all) do w:send("stop") end
      for _, w in ipairs(all) do w:join() end
      return
    end
  end
end

local sum = 0
if mode == "serial" then
  for _ = 1, requests do sum = sum + fib(n) end
else
  local h = lutra.spawn(hub, lutra.self(), worker, workers)
  for _ = 1, requests do h:send("req", n) end
  for _ = 1, requests do sum = sum + lutra.receive() end
  h:send("stop")
  h:join()
end
assert(sum == requests * fib(n))
print("fib_hub: ok " .. sum)
