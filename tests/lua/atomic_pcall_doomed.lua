-- lutra-args: -w 2
-- A user's pcall (or xpcall, or coroutine.resume) inside lutra.atomic cannot keep a
-- doomed attempt running: once a conflict dooms it, every shared-table access raises,
-- and the protected call re-raises the abort whatever it caught. So code after a
-- swallowed abort never runs with an inconsistent view: the invariant a + b == 0
-- holds in every attempt that gets to check it, and the transfers conserve it.
local s = lutra.shared({ a = 0, b = 0, broken = 0 })
local ps = {}
for i = 1, 8 do
  ps[i] = lutra.spawn(function(s)
    for _ = 1, 400 do
      lutra.atomic(function()
        local ok = pcall(function()
          s.a = s.a + 1
          s.b = s.b - 1
        end)
        -- Reached only when the protected part did not doom the attempt.
        local ok2 = xpcall(function() return s.a + s.b end, debug.traceback)
        local co = coroutine.create(function() return s.a end)
        coroutine.resume(co)
        if s.a + s.b ~= 0 then s.broken = s.broken + 1 end
        assert(ok and ok2)
      end)
    end
  end, s)
end
for _, p in ipairs(ps) do p:join() end
assert(s.a == 8 * 400 and s.b == -8 * 400, s.a .. " " .. s.b)
assert(s.broken == 0)

-- retry inside a user's pcall still retries (the process waits, then goes on): in
-- crates/lutra-lua/tests/blocking.rs, where the flag is set once the process waits.
