-- A nested lutra.atomic is all or nothing even when an error comes from outside its
-- function: a debug hook of the user's (an instruction limit, say) may raise at any
-- instruction the runtime runs between the nested function's return and the nested
-- call's return. Raised there, the error comes out of the nested call and the
-- nested call's writes are undone, as for an error of its function; once the call
-- has returned, its writes stay. The sweep raises at the runtime's 1st, 2nd, 3rd...
-- instruction after the nested function's last statement until the nested call
-- returns first; the outer transaction catches the error each time and goes on.
-- The same holds for the first function of an `or_else`, for a nested call inside a
-- coroutine, and for a catch by xpcall.
local RUNTIME = debug.getinfo(lutra.atomic, "S").source
local t = lutra.shared {}

-- Arms a count hook that raises `message` at the `n`th instruction of the runtime's
-- Lua code once `armed()` is true.
local function raise_at_runtime_instruction(n, armed, message)
  local seen = 0
  debug.sethook(function()
    if armed() and debug.getinfo(2, "S").source == RUNTIME then
      seen = seen + 1
      if seen == n then
        debug.sethook()
        error(message, 0)
      end
    end
  end, "", 1)
end

-- Runs `call(body)` inside a transaction with the hook armed at the `n`th runtime
-- instruction after `body`'s last statement; `call` runs `body` as a nested
-- transaction and catches what it raises. Answers where the error came out:
-- "failed" (the nested call raised it: its writes are undone), "after" (raised after
-- the nested call returned, in the catching call: its writes stay), "escaped" (past
-- the catching call: the whole transaction fails, nothing stays). Checks the writes
-- for each, and that the outer transaction's own writes stay unless it failed.
local function sweep_step(n, call)
  for _, k in ipairs({ "before", "nested", "after" }) do t[k] = nil end
  local message = "hook " .. n
  local outcome
  local committed, problem = pcall(lutra.atomic, function()
    t.before = n
    local done = false
    raise_at_runtime_instruction(n, function() return done end, message)
    local caught, ok, value = pcall(call, function()
      t.nested = n
      done = true
      return "result"
    end)
    debug.sethook()
    if not caught then
      outcome = "after"
      assert(ok == message, tostring(ok))
    elseif ok then
      outcome = "returned"
      assert(value == "result", tostring(value))
    else
      outcome = "failed"
      assert(value == message, tostring(value))
    end
    t.after = n
  end)
  debug.sethook()
  if not committed then
    assert(problem == message, tostring(problem))
    assert(t.before == nil and t.nested == nil and t.after == nil, "a failed transaction kept writes")
    return "escaped"
  end
  assert(t.before == n and t.after == n, "the outer transaction lost its writes")
  if outcome == "failed" then
    assert(t.nested == nil, n .. ": a nested call that failed kept its writes")
  else
    assert(t.nested == n, n .. ": a nested call that returned lost its writes")
  end
  return outcome
end

-- Raises at every runtime instruction from the nested function's end on, until the
-- error escapes the catching call; both a failed and a returned nested call must
-- have been seen.
local function sweep(name, call)
  local seen = {}
  for n = 1, 2000 do
    local outcome = sweep_step(n, call)
    seen[outcome] = (seen[outcome] or 0) + 1
    if outcome == "escaped" then
      assert(seen.failed, name .. ": the nested call never failed")
      assert(seen.after or seen.returned, name .. ": the nested call never returned")
      return
    end
  end
  error(name .. ": the error never escaped")
end

sweep("nested atomic", function(body)
  return pcall(lutra.atomic, body)
end)

sweep("nested atomic caught by xpcall", function(body)
  return xpcall(lutra.atomic, function(e) return e end, body)
end)

sweep("or_else's first function", function(body)
  return pcall(lutra.or_else, body, function() error("the alternative ran") end)
end)

sweep("nested atomic in a coroutine", function(body)
  local hook, mask, count = debug.gethook()
  local co = coroutine.create(function()
    debug.sethook(hook, mask, count)
    return lutra.atomic(body)
  end)
  return coroutine.resume(co)
end)

sweep("two nested levels", function(body)
  return pcall(lutra.atomic, function() return lutra.atomic(body) end)
end)
