-- lutra-args: -w 1 --preempt 0
-- Cancelled during a direct switch: a receiver blocked in ch:receive() is handed a
-- message directly by a send (the send completes at once), and is cancelled before
-- it runs to take it (on one worker without preemption, the sender runs on until it
-- blocks). The receiver's receive raises the cancellation, and the message it was
-- handed goes back to the channel: the next receiver takes it, nothing is lost.
local ch = lutra.channel()
local p = lutra.spawn(function(ch) return ch:receive() end, ch)
while p:status() ~= "waiting" do lutra.yield() end
ch:send("handed over") -- direct delivery to p: returns at once
assert(p:cancel("after the handoff"))
local ok, err = p:join()
assert(ok == false and err == "cancelled: after the handoff", tostring(err))
local got, value = ch:try_receive()
assert(got == true and value == "handed over", "the handed message was lost: " .. tostring(value))

print("ok")
