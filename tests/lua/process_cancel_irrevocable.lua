-- lutra-args: -w 2
-- A cancellation that comes while the process runs an irrevocable transaction (one
-- that communicated) lets it finish: its writes are committed, and the process stops
-- at its next safe point after it. The canceller polls a buffered channel (never
-- parks), so it runs beside the transaction, which cannot be preempted.
local s = lutra.shared { n = 0 }
local report = lutra.channel(4)
local victim = lutra.spawn(function(report, s)
  lutra.atomic(function()
    report:send("inside") -- makes the transaction irrevocable
    s.n = 1
    while lutra.self():status() ~= "cancelling" do end
  end)
  report:send("committed")
  lutra.receive() -- the next safe point
  error("not reached")
end, report, s)
local canceller = lutra.spawn(function(report, victim)
  while true do
    local got, what = report:try_receive()
    if got then
      assert(what == "inside")
      return victim:cancel("during an irrevocable transaction")
    end
  end
end, report, victim)
assert(canceller:join() == true)
local ok, err = victim:join()
assert(ok == false and err == "cancelled: during an irrevocable transaction", tostring(err))
assert(report:receive() == "committed")
assert(s.n == 1, "the irrevocable transaction was committed")
print("ok")
