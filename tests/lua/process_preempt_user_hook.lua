-- lutra-args: -w 1 --preempt 1
-- A process's own debug.sethook keeps firing across preemptions: the preemption hook
-- stands in for it only for an instruction or two, hands its other events on
-- meanwhile, and puts it back. The main process loops until it has been preempted 5
-- times (on one worker, the counter process runs only when main is preempted),
-- noting how often its own hook fired by each preemption: a count hook, then a line
-- hook (apart: Lua drops a count event that falls inside the line hook's function).
-- The counter runs until main is done: main may be preempted before, between and
-- after its two loops, each time letting it count once more.
local s = lutra.shared { preempted = 0, done = false }
lutra.spawn(function(s)
  while not s.done do
    s.preempted = s.preempted + 1
    lutra.yield()
  end
end, s)

local function fired_across_preemptions(mask, count)
  local fired = 0
  debug.sethook(function() fired = fired + 1 end, mask, count)
  local first = s.preempted
  local seen, at = first, {}
  while seen < first + 5 do
    local now = s.preempted
    if now ~= seen then
      seen = now
      at[#at + 1] = fired
    end
  end
  debug.sethook()
  return at[#at] > at[2], mask .. " hook: fired " .. table.concat(at, ", ") .. " times by each preemption"
end

assert(fired_across_preemptions("", 100))
assert(fired_across_preemptions("l"))
s.done = true
print("ok")
