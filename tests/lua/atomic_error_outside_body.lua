-- An error raised inside lutra.atomic but outside the transaction's function (a
-- debug hook of the user's, firing in the runtime's Lua code just before or just
-- after the function runs) ends the transaction as an error of the function would:
-- the error comes out of lutra.atomic once, no write of the attempt is seen, and
-- the process is outside any transaction afterwards (print, pcall and the next
-- lutra.atomic work as usual), also when the attempt had become irrevocable.
local s = lutra.shared { n = 0 }

-- Arms a call hook that raises `message` once, when `fires(info)` says so; `info`
-- describes the function being called.
local function raise_once_at(fires, message)
  debug.sethook(function()
    local info = debug.getinfo(2, "fn")
    if fires(info) then
      debug.sethook()
      error(message, 0)
    end
  end, "c")
end

-- Arms a count hook that raises `message` once, at the `n`th instruction of the
-- runtime's Lua code after `body_done()` turned true (the function's last statement
-- sets it); the 1st is the first thing the runtime does once the function returned.
local RUNTIME = debug.getinfo(lutra.atomic, "S").source
local function raise_at_nth_after(n, body_done, message)
  local seen = 0
  debug.sethook(function()
    if body_done() and debug.getinfo(2, "S").source == RUNTIME then
      seen = seen + 1
      if seen == n then
        debug.sethook()
        error(message, 0)
      end
    end
  end, "", 1)
end

local function outside_any_transaction(after)
  assert(not lutra.in_atomic(), after .. ": still inside a transaction")
  assert(pcall(print, "print works after " .. after))
  assert(pcall(error, "x") == false, after .. ": pcall no longer catches")
  assert(lutra.atomic(function() return s.n end) == 0, after .. ": a write was kept")
end

-- After the function returned: the end of the attempt, before its commit.
local done = false
raise_at_nth_after(1, function() return done end, "after the body")
local ok, err = pcall(lutra.atomic, function() s.n = s.n + 1; done = true end)
debug.sethook()
assert(not ok and err == "after the body", tostring(err))
outside_any_transaction("an error after the body")

-- Before the function runs: the protected call that will run it.
local runs = 0
raise_once_at(function(info)
  return info.name == "base_pcall" and lutra.in_atomic()
end, "before the body")
ok, err = pcall(lutra.atomic, function() runs = runs + 1; s.n = s.n + 1 end)
debug.sethook()
assert(not ok and err == "before the body", tostring(err))
assert(runs == 0, "the body ran although the error came first")
outside_any_transaction("an error before the body")

-- An irrevocable attempt (it printed): its writes are undone as well, and it is not
-- run again (the output appears once).
done = false
raise_at_nth_after(1, function() return done end, "after an irrevocable body")
ok, err = pcall(lutra.atomic, function()
  s.n = s.n + 1
  print("irrevocable body ran")
  done = true
end)
debug.sethook()
assert(not ok and err == "after an irrevocable body", tostring(err))
outside_any_transaction("an error after an irrevocable body")

-- A spawned process meeting the same error fails with it, and its state, given back
-- to the pool, leaves the next process outside any transaction.
local p = lutra.spawn(function(s)
  local runtime, done = debug.getinfo(lutra.atomic, "S").source, false
  debug.sethook(function()
    if done and debug.getinfo(2, "S").source == runtime then
      debug.sethook()
      error("in a process", 0)
    end
  end, "", 1)
  lutra.atomic(function() s.n = 7; done = true end)
end, s)
ok, err = pcall(p.join, p)
assert(not ok and tostring(err):find("in a process"), tostring(err))
for _ = 1, 8 do
  local q = lutra.spawn(function(s)
    assert(not lutra.in_atomic(), "a pooled state is still inside a transaction")
    print("fresh process")
    return lutra.atomic(function() return s.n end)
  end, s)
  assert(q:join() == 0)
end

-- Inside a transaction, a nested lutra.atomic stopped before its function runs
-- fails alone: the outer transaction goes on, and a later nested error undoes only
-- its own writes.
local t = lutra.shared {}
lutra.atomic(function()
  t.a = 1
  debug.sethook(function()
    local info = debug.getinfo(2, "n")
    if info.name == "base_pcall" and debug.getinfo(3, "f").func == lutra.atomic then
      debug.sethook()
      error("before the nested body", 0)
    end
  end, "c")
  local nested_ok, nested_err = pcall(lutra.atomic, function() t.x = 9 end)
  debug.sethook()
  assert(not nested_ok and nested_err == "before the nested body", tostring(nested_err))
  t.b = 2
  assert(not pcall(lutra.atomic, function() t.c = 3; error("nested") end))
  t.d = 4
end)
assert(t.a == 1 and t.b == 2 and t.c == nil and t.d == 4 and t.x == nil)

-- Raised at every instruction of the runtime's Lua code from the function's end on,
-- until lutra.atomic returns first: the transaction either failed whole (none of its
-- writes stays) or had committed before the error came (all of them stay, once), and
-- the process is outside any transaction either way.
local u = lutra.shared {}
local failed, committed_then_raised = 0, 0
for n = 1, 1000 do
  u.x, u.y = nil, nil
  local done = false
  raise_at_nth_after(n, function() return done end, "hook " .. n)
  ok, err = pcall(lutra.atomic, function()
    u.x = n
    u.y = n
    done = true
  end)
  debug.sethook()
  assert(not lutra.in_atomic(), n .. ": still inside a transaction")
  if ok then
    assert(u.x == n and u.y == n)
    break
  end
  assert(err == "hook " .. n, tostring(err))
  if u.x == nil then
    assert(u.y == nil, n .. ": half of the transaction stayed")
    failed = failed + 1
  else
    assert(u.x == n and u.y == n, n .. ": half of the transaction stayed")
    committed_then_raised = committed_then_raised + 1
  end
end
assert(failed > 0 and committed_then_raised > 0, "the sweep missed a side of the commit")
