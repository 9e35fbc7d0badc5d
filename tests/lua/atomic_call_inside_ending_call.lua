-- A lutra.atomic call made while another one ends (by a debug hook of the user's, or
-- a finalizer, at any instruction of the runtime's Lua code between the first call's
-- function and its return) runs as a transaction of its own or joins the first
-- one's attempt, and each call returns its own results. The sweep runs the second
-- call at the runtime's 1st, 2nd, 3rd... instruction after the first call's function
-- until the first call returns first.
local RUNTIME = debug.getinfo(lutra.atomic, "S").source
local s = lutra.shared { outer = 0, inner = 0 }
local ran_inside = 0
for n = 1, 1000 do
  local done, seen, inner = false, 0, nil
  debug.sethook(function()
    if done and debug.getinfo(2, "S").source == RUNTIME then
      seen = seen + 1
      if seen == n then
        debug.sethook()
        inner = table.pack(lutra.atomic(function()
          s.inner = s.inner + 1
          return "inner", n
        end))
      end
    end
  end, "", 1)
  local a, b, c, d = lutra.atomic(function()
    s.outer = s.outer + 1
    done = true
    return "outer", n, nil, 4
  end)
  debug.sethook()
  assert(a == "outer" and b == n and c == nil and d == 4,
    n .. ": the call returned " .. tostring(a) .. ", " .. tostring(b))
  assert(s.outer == n, n .. ": the outer call committed " .. s.outer .. " times")
  if not inner then
    assert(n > 1, "the hook never ran")
    break
  end
  assert(inner.n == 2 and inner[1] == "inner" and inner[2] == n,
    n .. ": the inner call returned " .. tostring(inner[1]))
  assert(s.inner == n, n .. ": the inner call committed " .. s.inner .. " times")
  ran_inside = ran_inside + 1
end
assert(ran_inside > 3, "the sweep ran the inner call at too few places")
