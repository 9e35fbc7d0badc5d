-- lutra-args: --mailbox-cap 2
-- A mailbox buffers up to --mailbox-cap messages; the next sender waits until the
-- owner receives. A sender waiting on a process that finishes gets an error.
local progress = lutra.channel(10)
local sink = lutra.spawn(function()
  lutra.sleep(0.2)
  local got = {}
  for i = 1, 3 do got[i] = lutra.receive() end
  return got[1], got[2], got[3]
end)
lutra.spawn(function(sink, progress)
  for i = 1, 3 do
    sink:send(i)
    progress:send(i)
  end
end, sink, progress)
lutra.sleep(0.1)
-- cap 2: the first two sends returned, the third waits
assert(progress:receive() == 1 and progress:receive() == 2)
assert(select(2, progress:try_receive()) == "empty", "a send beyond the mailbox cap must wait")
assert(select(2, progress:try_receive(5)) == 3)
local a, b, c = sink:join()
assert(a == 1 and b == 2 and c == 3)

-- a sender blocked on a full mailbox fails when the owner finishes
local quitter = lutra.spawn(function() lutra.sleep(0.1) end)
local sender = lutra.spawn(function(q)
  q:send(1)
  q:send(2)
  return pcall(q.send, q, 3)
end, quitter)
local ok, err = sender:join()
assert(ok == false and err:find("finished"), tostring(err))
print("ok")
