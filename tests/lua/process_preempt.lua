-- lutra-args: -w 1
-- A CPU-bound process is preempted, so that others run on the same worker.
local done = lutra.channel(4)
local spinner = lutra.spawn(function(done)
  local start = os.clock()
  local x = 0
  while os.clock() - start < 0.5 do x = x + 1 end
  -- the other process ran while this one spun
  local ok, what = done:try_receive()
  return ok and what or "starved"
end, done)
lutra.spawn(function(done) done:send("other ran") end, done)
assert(spinner:join() == "other ran")

-- a spinner inside a user coroutine is preempted too, and the coroutine is unaffected
local other = lutra.channel(4)
local nested = lutra.spawn(function(other)
  local gen = coroutine.wrap(function()
    local start = os.clock()
    while os.clock() - start < 0.3 do end
    coroutine.yield("first")
    return "second"
  end)
  local a, b = gen(), gen()
  local ok, what = other:try_receive()
  return a, b, ok and what
end, other)
lutra.spawn(function(other) other:send("ran too") end, other)
local a, b, c = nested:join()
assert(a == "first" and b == "second" and c == "ran too", tostring(c))
print("process_preempt ok")
