-- lutra-args: -w 1 --preempt 1
-- Preemption by time slice lands anywhere in running Lua code and changes nothing
-- the code can see. On one worker, a spinner only gets the ticks that another
-- process sends if it is preempted: it spins until it has seen 30 of them, so the
-- test needs 30 preemptions (it hangs, and the harness fails it, if preemption does
-- not work), and the work it spins on checks itself at every step: multiple results
-- and varargs (instructions that use the stack top left by the previous one),
-- pcall, a coroutine that spins inside, coroutine.wrap, string and table work.
local TICKS = 30
local ticks = lutra.channel(TICKS)

local spinner = lutra.spawn(function(ticks, wanted)
  local function several(n, ...) return n, select("#", ...), ... end
  local function sum(...)
    local total = 0
    for i = 1, select("#", ...) do total = total + select(i, ...) end
    return total
  end
  local function work(i)
    local n, count, a, b, c = several(i, i + 1, i + 2, i + 3)
    assert(n == i and count == 3 and a == i + 1 and b == i + 2 and c == i + 3)
    assert(sum(table.unpack({ i, i, i, i })) == 4 * i)
    local ok, value = pcall(function(x) return sum(x, x, several(x)) end, i)
    assert(ok and value == 3 * i, tostring(value)) -- x + x + several(x) = x + x + x + 0
    assert(("%d-%s"):format(i, "x") == tostring(i) .. "-x")
    return i
  end
  local inner = coroutine.create(function(rounds)
    while true do
      for i = 1, rounds do assert(work(i) == i) end
      rounds = coroutine.yield(rounds)
    end
  end)
  local gen = coroutine.wrap(function()
    local i = 0
    while true do i = i + 1; coroutine.yield(work(i)) end
  end)
  local seen, steps = 0, 0
  while seen < wanted do
    steps = steps + 1
    local ok, rounds = coroutine.resume(inner, 200)
    assert(ok and rounds == 200, tostring(rounds))
    assert(gen() == steps)
    local got, tick = ticks:try_receive()
    if got then
      assert(tick == seen + 1, "ticks in order")
      seen = tick
    end
  end
  return seen
end, ticks, TICKS)

lutra.spawn(function(ticks, count)
  for i = 1, count do
    ticks:send(i)
    lutra.yield()
  end
end, ticks, TICKS)

assert(spinner:join() == TICKS)

print("process_preempt_everywhere ok")
