-- lutra.freeze: deeply immutable values, shared by reference between processes.
local config = { name = "cfg", list = { 10, 20, 30 }, nested = { deep = { flag = true } }, 1.5, [2] = "two" }
config.list.owner = config
local f = lutra.freeze(config)

assert(lutra.is_frozen(f) and not lutra.is_frozen(config))
assert(type(f) == "userdata" and tostring(f):find("^frozen table: "))
-- reading
assert(f.name == "cfg" and f[1] == 1.5 and f[2] == "two" and #f == 2)
assert(math.type(f[1]) == "float")
assert(f.list[2] == 20 and #f.list == 3)
assert(lutra.is_frozen(f.list), "nested tables come back frozen")
assert(f.nested.deep.flag == true)
assert(f.list == f.list, "the same nested value each time")
assert(f.list.owner == f, "cycles are kept")
assert(f.missing == nil and f[99] == nil and f[2.0] == "two")
-- the original is untouched and independent
config.name = "changed"
assert(f.name == "cfg")
-- pairs and ipairs
local seen = {}
for k, v in pairs(f) do seen[k] = v end
assert(seen.name == "cfg" and seen[1] == 1.5 and seen[2] == "two" and lutra.is_frozen(seen.list))
local order = {}
for i, v in ipairs(f.list) do order[#order + 1] = v end
assert(#order == 3 and order[1] == 10 and order[3] == 30)
local first = {}
for k in pairs(f.list) do first[#first + 1] = k end
assert(first[1] == 1 and first[2] == 2 and first[3] == 3, "pairs gives the sequence first, in order")
-- assignment raises a clear error
local ok, err = pcall(function() f.name = "x" end)
assert(not ok and err:find("cannot assign to a frozen table") and err:find("transfer_freeze.lua"), err)
ok, err = pcall(function() f.list[1] = 0 end)
assert(not ok and err:find("frozen"), err)
assert(not pcall(rawset, f, "x", 1), "rawset needs a table")
-- freezing a frozen value returns it; immutable scalars are returned as they are
assert(lutra.freeze(f) == f and rawequal(lutra.freeze(f), f))
assert(lutra.freeze(f.list) == f.list)
assert(lutra.freeze(3) == 3 and lutra.freeze("s") == "s" and lutra.freeze(nil) == nil)
-- frozen values inside frozen values keep their identity
local outer = lutra.freeze({ inner = f })
assert(outer.inner == f)
-- only freezable values inside
local co = coroutine.create(function() end)
ok, err = pcall(lutra.freeze, { a = { co } })
assert(not ok and err:find("lutra.freeze") and err:find("argument #1.a[1]", 1, true), err)
ok, err = pcall(lutra.freeze, { [function() end] = 1 })
assert(not ok and err:find("key"), err)
ok, err = pcall(lutra.freeze, coroutine.create(function() end))
assert(not ok and err:find("table expected"), err)
ok, err = pcall(lutra.freeze, { lutra.move({}) })
assert(not ok and err:find("move marker"), err)
-- isolated functions, channels and processes may be frozen in
local ch = lutra.channel(4)
local handlers = lutra.freeze({ double = function(x) return 2 * x end, out = ch, [ch] = "by channel" })
assert(handlers.double(21) == 42 and handlers.double == handlers.double)
assert(handlers.out == ch and handlers[ch] == "by channel")
-- frozen keys
local key = lutra.freeze({ "k" })
local by_key = lutra.freeze({ [key] = "found", [{ "local" }] = "table key" })
assert(by_key[key] == "found")

-- crossing keeps identity: every process sees the same object
local back = lutra.channel(4)
local worker = lutra.spawn(function(ch, back)
  local g = ch:receive()
  back:send(tostring(g), tostring(g.list), g.name, g.double(4))
  back:send(g)
end, ch, back)
local shared = lutra.freeze({ name = "shared", list = { 1 }, double = function(x) return x * 2 end })
ch:send(shared)
local where, list_where, name, eight = back:receive()
assert(where == tostring(shared) and list_where == tostring(shared.list), "the same object, not a copy")
assert(name == "shared" and eight == 8)
assert(back:receive() == shared, "back home it is the same userdata")
worker:join()
-- key lookup with a frozen key that crossed
local keyed = lutra.spawn(function(t, k) return t[k] end, by_key, key):join()
assert(keyed == "found")
print("transfer_freeze ok")
