-- What does not cross: each refused kind names the value, its key path and why; the
-- sender keeps running and nothing was sent.
local ch = lutra.channel(8)

local function refused(pattern, ...)
  local ok, err = pcall(ch.send, ch, ...)
  assert(not ok, "expected a refusal")
  assert(err:find(pattern, 1, true), ("%q does not contain %q"):format(err, pattern))
  local got, why = ch:try_receive()
  assert(not got and why == "empty", "nothing was sent")
  return err
end

local co = coroutine.create(function() end)
local err = refused("cannot transfer coroutine at argument #2.config[3].handler", 1, { config = { 1, 2, { handler = co } } })
assert(err:find("coroutine's stack"), err)

refused("cannot transfer C function at argument #1.f", { f = string.format })
local captured = 42
err = refused("cannot transfer function at argument #1", function() return captured end)
assert(err:find("'captured'") and err:find("pass 'captured' as an argument"), err)
refused("cannot transfer library function at argument #1.p", { p = print })
refused("cannot transfer userdata (file) at argument #1", io.stdout)
refused('argument #1["odd key"][1]', { ["odd key"] = { co } })
refused("a key of argument #1", { [co] = true })
do
  local _ENV = { x = 1 }
  refused("its _ENV is a local table", function() return x end)
end
-- deep paths are shortened in the middle
local deep = {}
local node = deep
for _ = 1, 40 do node.next = {} node = node.next end
node.bad = co
err = refused("argument #1.next.next.next.…", deep)
assert(err:find("%.next%.bad: "), err)

-- a long linked list crosses (the copy is iterative)
local list = nil
for i = 1, 100000 do list = { value = i, next = list } end
ch:send(list)
local back = ch:receive()
local count = 0
while back do count = count + 1 back = back.next end
assert(count == 100000)

-- refused in spawn arguments and mailbox sends too
local ok, e = pcall(lutra.spawn, function() end, 1, co)
assert(not ok and e:find("argument #3"), e)
local p = lutra.spawn(function() return lutra.receive() end)
ok, e = pcall(p.send, p, { co })
assert(not ok and e:find("argument #1[1]", 1, true), e)
p:send("fine")
assert(p:join() == "fine", "the sender kept running and the process got only the later message")
print("transfer_refused ok")
