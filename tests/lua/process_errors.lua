-- A failing process never takes down others; join re-raises with the process's
-- message and traceback; a process returning an untransferable value fails clearly.
local p = lutra.spawn(function()
  local function inner() error("deep failure") end
  inner()
end)
local ok, err = pcall(p.join, p)
assert(not ok, "join raises")
assert(err:find("process#%d+") and err:find("failed: ") and err:find("deep failure"), err)
assert(err:find("stack traceback:") and err:find("in local 'inner'"), err)
-- joining again gives the same error
local ok2, err2 = pcall(p.join, p)
assert(not ok2 and err2 == err)

-- non-string errors are reported through tostring
local q = lutra.spawn(function() error(setmetatable({}, { __tostring = function() return "custom error" end })) end)
ok, err = pcall(q.join, q)
assert(not ok and err:find("custom error"), err)

-- others go on: many fail, many succeed, side by side
local ps = {}
for i = 1, 50 do
  ps[i] = lutra.spawn(function(i)
    if i % 2 == 0 then error("even " .. i) end
    return i
  end, i)
end
local good, bad = 0, 0
for i = 1, 50 do
  local ok3, v = pcall(ps[i].join, ps[i])
  if ok3 then assert(v == i) good = good + 1 else assert(v:find("even " .. i)) bad = bad + 1 end
end
assert(good == 25 and bad == 25)

-- a process returning an untransferable value fails, saying which and why
local r = lutra.spawn(function() return 1, { co = coroutine.create(print) } end)
ok, err = pcall(r.join, r)
assert(not ok and err:find("returned a value that cannot be transferred"), err)
assert(err:find("cannot transfer coroutine at result #2.co", 1, true), err)

-- sending to a finished process raises
ok, err = pcall(r.send, r, "late")
assert(not ok and err:find("finished"), err)
print("process_errors ok")
