-- A plain table nested far deeper than a worker's stack could recurse is copied into
-- shared tables (lutra.shared and assignment alike), as channels copy it.
local DEPTH = 50000
local function nested(depth)
  local root = {}
  local t = root
  for _ = 1, depth do
    local inner = {}
    t.next = inner
    t = inner
  end
  t.last = true
  return root
end

local s = lutra.shared(nested(DEPTH))
local walked, t = 0, s
while t.next do
  t = t.next
  walked = walked + 1
end
assert(walked == DEPTH and t.last == true, walked)

local holder = lutra.shared({})
holder.deep = nested(DEPTH)
walked, t = 0, holder.deep
while t.next do
  t = t.next
  walked = walked + 1
end
assert(walked == DEPTH, walked)

-- an error deep down still names the whole path
local bad = nested(3)
bad.next.next.next.co = coroutine.create(function() end)
local ok, err = pcall(lutra.shared, bad)
assert(not ok and err:find('argument #1["next"]["next"]["next"]["co"]', 1, true), err)
print("ok")
