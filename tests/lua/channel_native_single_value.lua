-- lutra-args: -w 1
-- A message of one value is answered natively (api/native/perform.rs): an integer
-- or a short string without a zero byte is pushed at once, any other value by the
-- general path. Every kind arrives as it was sent, through a rendezvous (the
-- receiver parked, then resumed with the message) and through a buffer.
local values = {
  0, -1, math.maxinteger, math.mininteger, 2.5, 1e308,
  "", "m", "message", string.rep("x", 14), string.rep("y", 15), string.rep("z", 16),
  "a\0b", "\0", string.rep("long ", 40), true, false,
}
local ch, back = lutra.channel(), lutra.channel(64)
local p = lutra.spawn(function(ch, back, n)
  for _ = 1, n do back:send((ch:receive())) end
  back:send(nil)
  back:send(ch)
end, ch, back, #values)
for _, v in ipairs(values) do ch:send(v) end
for i, v in ipairs(values) do
  local got = back:receive()
  assert(got == v and math.type(got) == math.type(v), "value " .. i .. ": " .. tostring(got))
end
assert(back:receive() == nil)
assert(rawequal(back:receive(), ch), "a handle comes back as the same userdata")
p:join()
print("ok")
