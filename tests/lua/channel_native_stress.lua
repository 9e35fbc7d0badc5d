-- lutra-args: -w 2
-- The native fast paths of ch:send / ch:receive and luaproc.send / luaproc.receive
-- under load: many senders and receivers on a few rendezvous and buffered channels,
-- every message (scalars of every kind, and tables, which take the slow paths) is
-- received exactly once; a receiver blocked in a user coroutine, and a send refused
-- at once (closed channel) or while waiting, keep their semantics. Run in both sync
-- modes: this file in the default mode, `channel_native_stress_tm.lua` in `tm`.
local luaproc = require "luaproc"
local SENDERS, PER = 12, 300

local function check(seen, label)
  for s = 1, SENDERS do
    for i = 1, PER do
      assert(seen[s * 100000 + i] == 1, label .. ": message " .. s .. "/" .. i .. " seen "
        .. tostring(seen[s * 100000 + i]) .. " times")
    end
  end
end

-- lutra channels: rendezvous and buffered; receivers count what they get.
for _, capacity in ipairs({ 0, 3 }) do
  local ch, results = lutra.channel(capacity), lutra.channel()
  for s = 1, SENDERS do
    lutra.spawn(function(ch, s, PER)
      for i = 1, PER do
        local id = s * 100000 + i
        local kind = i % 4
        if kind == 0 then ch:send(id)
        elseif kind == 1 then ch:send(id, "text " .. id, true)
        elseif kind == 2 then ch:send(id + 0.0, nil)
        else ch:send({ id = id }) end
      end
    end, ch, s, PER)
  end
  for _ = 1, SENDERS do
    lutra.spawn(function(ch, results, PER)
      local got = {}
      for _ = 1, PER do
        local v, text = ch:receive()
        if type(v) == "table" then v = v.id end
        v = math.tointeger(v)
        if text ~= nil then assert(text == "text " .. v, text) end
        got[#got + 1] = v
      end
      results:send(got)
    end, ch, results, PER)
  end
  local seen = {}
  for _ = 1, SENDERS do
    for _, v in ipairs(results:receive()) do seen[v] = (seen[v] or 0) + 1 end
  end
  check(seen, "capacity " .. capacity)
end

-- luaproc's named channels, through the same fast paths.
assert(luaproc.newchannel("stress") and luaproc.newchannel("stress.sums"))
for s = 1, SENDERS do
  assert(luaproc.newproc(([[
    for i = 1, %d do assert(luaproc.send("stress", %d * 100000 + i) == true) end
  ]]):format(PER, s)))
  assert(luaproc.newproc(([[
    local got = {}
    for _ = 1, %d do got[#got + 1] = luaproc.receive("stress") end
    luaproc.send("stress.sums", table.concat(got, ","))
  ]]):format(PER)))
end
local seen = {}
for _ = 1, SENDERS do
  for v in luaproc.receive("stress.sums"):gmatch("%d+") do
    v = math.tointeger(tonumber(v))
    seen[v] = (seen[v] or 0) + 1
  end
end
check(seen, "luaproc")

-- A receive blocked inside a user coroutine parks the process and comes back there.
local ch = lutra.channel()
lutra.spawn(function(ch) ch:send("through a coroutine") end, ch)
local co = coroutine.wrap(function() return ch:receive() end)
assert(co() == "through a coroutine")

-- A send waiting when its channel is closed, and a luaproc receive waiting when its
-- channel is deleted: in crates/lutra-lua/tests/blocking.rs.
assert(luaproc.newchannel("doomed"))
assert(luaproc.delchannel("doomed"))
-- ... and a send to it now, by name, finds no channel.
local sent, problem = luaproc.send("doomed", 1)
assert(sent == nil and problem == "channel 'doomed' does not exist", problem)
print("ok")
