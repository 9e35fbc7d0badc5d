-- lutra-args: -w 1
-- A native message call that parks a process's main coroutine marks the park in the
-- process's context and yields no values (`process/resume.rs`); the mark is consumed
-- by that yield alone. So every other yield of the main coroutine with no values — a
-- bare `coroutine.yield()` at the top of the process, `lutra.yield()`, a preemption —
-- right after a native park or a native call that did not park is still a yield: the
-- process runs on (taken for a park, it would never be woken, and the program would
-- end in a deadlock report). A native call parked inside a coroutine of the process
-- yields `PARK` through the prelude's relay, as before. One worker: each step below
-- runs in the order the comments give.
local ch, back = lutra.channel(), lutra.channel()

local p = lutra.spawn(function(ch, back)
  local got = {}
  -- 1. Nothing sent yet: parks natively on the main coroutine.
  got[#got + 1] = ch:receive()
  -- 2. Yields with no values at once after the park's continuation.
  coroutine.yield()
  lutra.yield()
  -- 3. A receive that does not park (message 2 is queued), then a bare yield.
  got[#got + 1] = ch:receive()
  coroutine.yield()
  -- 4. Parks natively inside a coroutine: `PARK` goes up through the relay.
  local inner = coroutine.wrap(function() return ch:receive() end)
  got[#got + 1] = inner()
  -- 5. Parks natively on the main coroutine again, then runs until preempted (at
  --    least two 5 ms slices) while the main process waits to run.
  got[#got + 1] = ch:receive()
  local stop = os.clock() + 0.03
  while os.clock() < stop do end
  back:send(table.concat(got, ","))
end, ch, back)

lutra.yield()        -- p runs to step 1 and parks
ch:send(1)           -- handed to p: the send completes at once
ch:send(2)           -- queued: parks until p takes it (step 3)
ch:send(3)           -- p took nothing yet: parks until step 4 takes it
lutra.yield()        -- p parks at step 5
ch:send(4)
assert(back:receive() == "1,2,3,4", "the values came in order")
p:join()
print("native park mark: ok")
