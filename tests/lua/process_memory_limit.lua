-- lutra-args: --memory-limit 4000000
-- A process over the memory limit fails with "not enough memory"; the others go on.
local hog = lutra.spawn(function()
  local t = {}
  for i = 1, math.huge do t[i] = string.rep("x", 1000) .. i end
end)
local fine = lutra.spawn(function()
  local t = {}
  for i = 1, 1000 do t[i] = i * i end
  return #t
end)
local ok, err = pcall(hog.join, hog)
assert(not ok and err:find("not enough memory"), err)
assert(fine:join() == 1000)
-- the runtime goes on: more processes run (and recycled states are within limits)
for i = 1, 10 do assert(lutra.spawn(function(i) return i + 1 end, i):join() == i + 1) end
-- a message too big for its receiver fails in the receiver only
local big = {}
for i = 1, 12000 do big[i] = string.rep("y", 100) .. i end
local ch = lutra.channel(1)
local receiver = lutra.spawn(function(ch)
  local ballast = string.rep("z", 2500000)
  local t = ch:receive()
  return #t + #ballast
end, ch)
ch:send(big)
ok, err = pcall(receiver.join, receiver)
assert(not ok and err:find("not enough memory"), err)
assert(#big == 12000, "the sender goes on")
print("process_memory_limit ok")
