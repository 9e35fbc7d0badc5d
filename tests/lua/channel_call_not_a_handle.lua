-- A native channel call made on something that is not a channel handle raises a bad
-- argument error, and never takes it for the handle its process called on last: as
-- a process's first native call (nothing noted yet: nil and false read as a null
-- userdata), after a call on a handle (its light-userdata user value, the channel's
-- own address, is no handle), and between calls on the handle.
local ch = lutra.channel(4)
local p = lutra.spawn(function(ch)
  local errors = {}
  local function try(call, value, ...)
    local ok, err = pcall(call, value, ...)
    assert(not ok, "a call on a " .. type(value) .. " did not fail")
    errors[#errors + 1] = err
  end
  try(ch.send, nil, 1)
  try(ch.receive, false)
  ch:send("noted") -- the handle becomes the last one called on
  local address = debug.getuservalue(ch)
  assert(type(address) == "userdata")
  try(ch.send, address, 1)
  try(ch.receive, address)
  try(ch.send, 42, 1)
  assert(ch:receive() == "noted")
  return table.concat(errors, "\n")
end, ch)
local errors = p:join()
local expected = {
  "bad argument #1 to 'send' (channel expected, got nil)",
  "bad argument #1 to 'receive' (channel expected, got boolean)",
  "bad argument #1 to 'send' (channel expected, got userdata)",
  "bad argument #1 to 'receive' (channel expected, got userdata)",
  "bad argument #1 to 'send' (channel expected, got number)",
}
local n = 0
for line in errors:gmatch("[^\n]+") do
  n = n + 1
  assert(line:find(expected[n], 1, true), line)
end
assert(n == #expected, errors)
print("ok")
