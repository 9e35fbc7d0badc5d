-- lutra-args: -w 2
-- expect-stdout: told of every end
-- expect-no-stderr: failed
-- lutra.spawn_monitor(f, ...): the new process is monitored by its spawner before its
-- first slice, so however soon it ends, its end reaches the spawner's mailbox and is
-- attended to: a failure is neither reported on standard error nor fails the run.
-- Each process here ends in its first slice, on either worker, while the spawner
-- goes on spawning.
local n = 40
local ids = {}
for i = 1, n do
  local p
  if i % 2 == 0 then
    p = lutra.spawn_monitor(function(i) error("bad input " .. i, 0) end, i)
  else
    p = lutra.spawn_monitor(function(i) return i * i end, i)
  end
  ids[p:id()] = i
end
local seen = 0
for _ = 1, n do
  local down = lutra.receive()
  local i = ids[down[2]:id()]
  assert(down[1] == "down" and i, "an unexpected message")
  ids[down[2]:id()] = nil
  if i % 2 == 0 then
    assert(down[3] == "failed" and down[4]:find("bad input " .. i, 1, true), tostring(down[4]))
  else
    assert(down[3] == "returned" and down[4] == i * i, tostring(down[3]))
  end
  seen = seen + 1
end
assert(seen == n and next(ids) == nil)
-- The same errors as lutra.spawn for what cannot be spawned.
local ok, err = pcall(lutra.spawn_monitor, 42)
assert(not ok and err:find("bad argument #1 to 'spawn_monitor' (function or source string expected, got integer)", 1, true), err)
print("told of every end")
