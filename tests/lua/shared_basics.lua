-- Shared tables: construction from a plain table (nested plain tables become new
-- shared tables), indexing, #, pairs, ipairs, removal, table.insert, refused keys.
local s = lutra.shared({ 10, 20, 30, name = "lutra", nested = { deep = { x = 1 } } })
assert(lutra.is_shared(s) and not lutra.is_shared({}))
assert(tostring(s):match("^shared#%d+$"))
assert(#s == 3 and s[1] == 10 and s[3] == 30 and s[4] == nil)
assert(s.name == "lutra" and s.missing == nil)

-- A nested plain table was copied into a new shared table, recursively.
assert(lutra.is_shared(s.nested) and lutra.is_shared(s.nested.deep))
assert(s.nested.deep.x == 1)
assert(s.nested == s.nested, "one handle per shared table")

-- Storing a plain table copies it: later changes to the plain table are not seen.
local plain = { a = 1 }
s.copy = plain
plain.a = 2
assert(lutra.is_shared(s.copy) and s.copy.a == 1)

-- Integers and floats stay distinct; integral float keys are integer keys.
s.f = 1.5
s.i = 3
assert(math.type(s.f) == "float" and math.type(s.i) == "integer")
s[2.0] = 21
assert(s[2] == 21)

-- #, ipairs, pairs
local seen = {}
for i, v in ipairs(s) do seen[#seen + 1] = v end
assert(#seen == 3 and seen[2] == 21)
local keys = 0
for k, v in pairs(s) do
  keys = keys + 1
  assert(s[k] == v)
end
assert(keys == 3 + 5, "3 array items, name, nested, copy, f, i: " .. keys)

-- Removal: the border moves down; re-inserting moves it up again.
s[2] = nil
assert(#s == 1 and s[2] == nil)
s[2] = 22
assert(#s == 3)
table.insert(s, 40)
assert(#s == 4 and s[4] == 40)

-- Cycles of plain tables become cycles of shared tables.
local a = { name = "a" }
a.self = a
s.cycle = a
assert(s.cycle.self == s.cycle and s.cycle.self.self.name == "a")

-- Shared tables as values and keys, channels as values.
local other = lutra.shared()
s[other] = "keyed by a shared table"
assert(s[other] == "keyed by a shared table")
local ch = lutra.channel(1)
s.ch = ch
assert(s.ch == ch)

-- Refused keys.
local ok, err = pcall(function() s[nil] = 1 end)
assert(not ok and err:find("key cannot be nil"), err)
ok, err = pcall(function() s[0 / 0] = 1 end)
assert(not ok and err:find("NaN"), err)
ok, err = pcall(function() s[{}] = 1 end)
assert(not ok and err:find("cannot be a shared table's key"), err)
assert(s[{}] == nil and s[nil] == nil, "reading a key that cannot exist gives nil")

-- A shared table made from a table with a metatable is refused.
ok, err = pcall(lutra.shared, setmetatable({}, {}))
assert(not ok and err:find("metatable"), err)
ok, err = pcall(lutra.shared, 42)
assert(not ok and err:find("bad argument #1 to 'shared'"), err)
