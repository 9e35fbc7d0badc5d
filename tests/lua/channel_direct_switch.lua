-- lutra-args: -w 2
-- The scheduler's direct switch (a process woken by the running one, which then
-- parks, runs next on the same worker) under many processes: 300 senders and 300
-- receivers on 7 rendezvous channels, every exchange a wake followed by a park, then
-- the same through the luaproc API; every message is received exactly once. Run in
-- both sync modes: this file in the default mode, `channel_direct_switch_tm.lua` in
-- `tm`.
local luaproc = require "luaproc"
local PAIRS, PER, CHANNELS = 300, 60, 7

local function check(lists, label)
  local seen = {}
  for _, list in ipairs(lists) do
    for v in list:gmatch("%d+") do
      v = math.tointeger(tonumber(v))
      seen[v] = (seen[v] or 0) + 1
    end
  end
  for s = 1, PAIRS do
    for i = 1, PER do
      local id = s * 100000 + i
      assert(seen[id] == 1, label .. ": message " .. s .. "/" .. i .. " seen "
        .. tostring(seen[id]) .. " times")
    end
  end
end

-- lutra channels.
local channels = {}
for c = 1, CHANNELS do channels[c] = lutra.channel() end
local receivers = {}
for s = 1, PAIRS do
  local ch = channels[s % CHANNELS + 1]
  lutra.spawn(function(ch, s, PER)
    for i = 1, PER do ch:send(s * 100000 + i) end
  end, ch, s, PER)
  receivers[s] = lutra.spawn(function(ch, PER)
    local got = {}
    for _ = 1, PER do got[#got + 1] = ch:receive() end
    return table.concat(got, ",")
  end, ch, PER)
end
local lists = {}
for s = 1, PAIRS do lists[s] = receivers[s]:join() end
check(lists, "lutra")

-- The luaproc API: channels by name.
for c = 1, CHANNELS do assert(luaproc.newchannel("switch" .. c)) end
assert(luaproc.newchannel("switch.lists"))
for s = 1, PAIRS do
  local name = "switch" .. (s % CHANNELS + 1)
  assert(luaproc.newproc(([[
    for i = 1, %d do luaproc.send(%q, %d * 100000 + i) end
  ]]):format(PER, name, s)))
  assert(luaproc.newproc(([[
    local got = {}
    for _ = 1, %d do got[#got + 1] = luaproc.receive(%q) end
    luaproc.send("switch.lists", table.concat(got, ","))
  ]]):format(PER, name)))
end
lists = {}
for s = 1, PAIRS do lists[s] = luaproc.receive("switch.lists") end
check(lists, "luaproc")
print("ok")
