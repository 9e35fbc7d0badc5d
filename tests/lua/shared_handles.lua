-- Handles to one shared table compare equal in every process: sent over a channel
-- and back, passed to spawn, stored in another shared table.
local s = lutra.shared({ x = 1 })
local there, back = lutra.channel(), lutra.channel()
local p = lutra.spawn(function(there, back)
  local t = there:receive()
  assert(lutra.is_shared(t) and t.x == 1)
  t.x = 2
  local registry = lutra.shared({ t = t })
  assert(registry.t == t)
  back:send(t, registry)
end, there, back)
there:send(s)
local t, registry = back:receive()
p:join()
assert(t == s and rawequal(t, s), "the same handle comes back")
assert(registry.t == s)
assert(s.x == 2, "a change made in another process is seen")
local seen = {}
seen[s] = true
assert(seen[t], "handles work as keys of plain tables")
assert(lutra.spawn(function(a, b) return a == b end, s, registry.t):join() == true)
