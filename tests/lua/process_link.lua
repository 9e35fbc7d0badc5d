-- lutra.spawn_link: linked processes stop together. A tree whose leaf fails stops
-- whole (the leaf's parent is cancelled, which cancels its parent and its other
-- children); a tree whose root fails stops its children; a child that returns
-- normally stops nothing. Each process is watched by a monitor (in the main
-- process, which is linked to none of them).

local function down_of(p)
  local down = lutra.receive()
  assert(down[1] == "down", tostring(down[1]))
  return down[2], down[3], down[4]
end

-- The processes of a tree send their handles here, then wait.
local handles = lutra.channel(16)
local forever = lutra.channel()

-- root links A and B; A links leaf. leaf fails once told to.
local root = lutra.spawn(function(handles, forever)
  local a = lutra.spawn_link(function(handles, forever)
    local leaf = lutra.spawn_link(function(forever)
      forever:receive()
    end, forever)
    handles:send("leaf", leaf)
    forever:receive()
  end, handles, forever)
  local b = lutra.spawn_link(function(forever) forever:receive() end, forever)
  handles:send("a", a)
  handles:send("b", b)
  forever:receive()
end, handles, forever)

local tree = { root = root }
for _ = 1, 3 do
  local name, p = handles:receive()
  tree[name] = p
end
for _, p in pairs(tree) do lutra.monitor(p) end
-- Make the leaf fail: cancel it (a failure through cancellation).
tree.leaf:cancel("leaf stops")
local ended = {}
for _ = 1, 4 do
  local p, status, why = down_of()
  ended[p] = { status, why }
end
assert(ended[tree.leaf][1] == "cancelled" and ended[tree.leaf][2] == "cancelled: leaf stops")
for _, name in ipairs({ "a", "b", "root" }) do
  local e = ended[tree[name]]
  assert(e and e[1] == "cancelled" and e[2]:find("linked process#%d+ "), name .. ": " .. tostring(e and e[2]))
end

-- A linked child that fails with an error stops its parent (and the parent's other
-- children); the failure itself is reported to the monitor.
local trigger = lutra.channel()
local parent = lutra.spawn(function(handles, forever, trigger)
  local failing = lutra.spawn_link(function(trigger)
    trigger:receive()
    error("child error", 0)
  end, trigger)
  local sibling = lutra.spawn_link(function(forever) forever:receive() end, forever)
  handles:send(failing, sibling)
  forever:receive()
end, handles, forever, trigger)
local failing, sibling = handles:receive()
lutra.monitor(parent) lutra.monitor(failing) lutra.monitor(sibling)
trigger:send("fail now")
ended = {}
for _ = 1, 3 do
  local p, status, what = down_of()
  ended[p] = { status, what }
end
assert(ended[failing][1] == "failed" and ended[failing][2]:find("child error"))
assert(ended[parent][1] == "cancelled" and ended[sibling][1] == "cancelled")
assert(ended[parent][2] == "cancelled: linked process#" .. failing:id() .. " failed", ended[parent][2])
assert(not pcall(failing.join, failing))

-- A linked child that returns stops nothing.
local survivor = lutra.spawn(function()
  local child = lutra.spawn_link(function() return "fine" end)
  assert(child:join() == "fine")
  return "parent fine"
end)
assert(survivor:join() == "parent fine")
print("ok")
