-- lutra-args: -w 2
-- Wake-ups that scale: many more processes than workers receive
-- on one rendezvous channel `a`, some through select over `a` and `b`, some with a
-- timeout after which they leave. Every value sent is received exactly once, and
-- nothing hangs: a wake-up handed to a receiver that leaves without taking passes on
-- (a lost one would leave the main chunk blocked in `send` — a deadlock report).
-- Which receiver takes what, and whether a timeout expires, is left to the
-- interleaving: only what must hold whatever it is is asserted.
-- Also run by crates/lutra-lua/tests/wake.rs under both `--sync` modes.
local PLAIN, SELECTING, TIMED = 2000, 200, 200
local ON_B = SELECTING // 2
local a, b = lutra.channel(), lutra.channel()
local reports = lutra.channel(PLAIN + SELECTING + TIMED)

local function plain(a, reports)
  local ok, v = pcall(a.receive, a)
  reports:send(ok and "a" or "closed", v)
end

local function selecting(a, b, reports)
  local ok, ch, v = pcall(lutra.select, a, b)
  if not ok then return reports:send("closed") end
  reports:send(ch == a and "a" or "b", v)
end

local function timed(a, reports, timeout)
  local got, v = a:try_receive(timeout)
  reports:send(got and "a" or v, got and v or nil)
end

for i = 1, TIMED do lutra.spawn(timed, a, reports, (i % 8) * 0.02) end
for _ = 1, SELECTING do lutra.spawn(selecting, a, b, reports) end
for _ = 1, PLAIN do lutra.spawn(plain, a, reports) end

-- Rendezvous: each send returns once its value was taken. `b`'s values can only go
-- to selecting processes, so they go first, while all of those may still take them.
for i = 1, ON_B do b:send(-i) end
local SENT_ON_A = PLAIN + SELECTING - ON_B
for i = 1, SENT_ON_A do a:send(i) end
a:close()
b:close()

local got, counts = {}, { a = 0, b = 0, closed = 0, timeout = 0 }
for _ = 1, PLAIN + SELECTING + TIMED do
  local from, v = reports:receive()
  counts[from] = counts[from] + 1
  if from == "a" or from == "b" then
    assert(got[v] == nil, "value " .. tostring(v) .. " received twice")
    got[v] = from
  end
end
for i = 1, ON_B do assert(got[-i] == "b", "value -" .. i .. " lost") end
for i = 1, SENT_ON_A do assert(got[i] == "a", "value " .. i .. " lost") end
assert(counts.a == SENT_ON_A and counts.b == ON_B)
-- Whoever did not take a value saw the channels closed or timed out.
assert(counts.closed + counts.timeout == TIMED)
print("ok", counts.timeout, counts.closed)
