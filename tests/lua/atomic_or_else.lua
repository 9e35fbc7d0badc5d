-- lutra.or_else(f, g): when f retries, its writes are undone and g runs; when both
-- retry, the transaction waits for a change to anything either read.
local a = lutra.shared({ n = 0 })
local b = lutra.shared({ n = 2 })

local function take(t, name)
  return function()
    t.touched = name
    if t.n == 0 then lutra.retry() end
    t.n = t.n - 1
    return name
  end
end

assert(lutra.or_else(take(a, "a"), take(b, "b")) == "b")
assert(a.touched == nil, "the retried branch's writes were undone")
assert(b.touched == "b" and b.n == 1)

-- Inside atomic, with arguments.
local got = lutra.atomic(function()
  return lutra.or_else(function(x) lutra.retry() end, function(x) return x * 2 end, 21)
end)
assert(got == 42)

-- Nested or_else.
local third = lutra.atomic(function()
  return lutra.or_else(take(a, "a"), function()
    return lutra.or_else(take(a, "a2"), function() return "third" end)
  end)
end)
assert(third == "third" and a.touched == nil)

-- Both branches retrying, woken by a change to what the first branch read, is in
-- crates/lutra-lua/tests/blocking.rs (the change must come once the process waits).

-- An error in the first branch is not a retry: it propagates.
local ok, err = pcall(lutra.or_else, function() error("boom") end, function() return "g" end)
assert(not ok and err:find("boom"), err)
