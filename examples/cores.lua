-- cores.lua — every core at work: the same CPU-bound jobs run first one after
-- another in a single process, then as one process per job, side by side.
--
-- Each job estimates pi by Monte Carlo with its own random sequence (a 64-bit
-- linear congruential generator, so results are the same in both runs). The
-- program prints each process's result, both elapsed times, the speedup, and how
-- many cores were busy on average (CPU time / elapsed time).
--
--   lutra examples/cores.lua [jobs] [total_samples]
--   lutra -w 1 examples/cores.lua     -- the same on one worker: no speedup
--
-- jobs defaults to the number of cores; total_samples (shared out among the jobs)
-- to 24,000,000, about 3 s of work for one core.
--
-- At the end it says whether other programs kept the machine busy meanwhile, as the
-- benchmark suite does (crates/lutra-bench/src/suite/machine.rs): the processor
-- time /proc/stat counts as busy, minus this program's own (os.clock), over the
-- elapsed time, is the number of cores others used; more than a quarter of the
-- cores means the speedup above understates what an idle machine gives.

local jobs, total = ...

-- Seconds of processor time all processors spent busy since boot (/proc/stat's
-- user, nice, system, irq, softirq and steal ticks, at 100 a second) and the
-- number of processors, or nil.
local function busy_seconds()
  local stat = io.open("/proc/stat")
  if not stat then return nil end
  local text = stat:read("a")
  stat:close()
  local ticks = {}
  for n in (text:match("^cpu [^\n]*") or ""):gmatch("%d+") do ticks[#ticks + 1] = tonumber(n) end
  if #ticks < 8 then return nil end
  local _, cpus = text:gsub("\ncpu%d+ ", "")
  return (ticks[1] + ticks[2] + ticks[3] + ticks[6] + ticks[7] + ticks[8]) / 100, cpus
end
local busy_start, own_start, wall_start = busy_seconds(), os.clock(), lutra.now()

jobs = math.tointeger(tonumber(jobs)) or lutra.workers()
total = math.tointeger(tonumber(total)) or 24000000
local samples = math.max(total // jobs, 1)

-- One job: `samples` random points in the unit square, counting those inside the
-- quarter circle. Captures nothing, so it can run as a process.
local function estimate_pi(seed, samples)
  local x = seed
  local inside = 0
  local scale = 1 / (1 << 31)
  for _ = 1, samples do
    x = x * 6364136223846793005 + 1442695040888963407
    local a = ((x >> 33) & 0x7fffffff) * scale
    x = x * 6364136223846793005 + 1442695040888963407
    local b = ((x >> 33) & 0x7fffffff) * scale
    if a * a + b * b < 1.0 then inside = inside + 1 end
  end
  return 4 * inside / samples
end

print(string.format("cores.lua: %d jobs of %d samples each", jobs, samples))

-- 1. One after another, in this process.
local t0, c0 = lutra.now(), os.clock()
local sequential = {}
for i = 1, jobs do sequential[i] = estimate_pi(i, samples) end
local t_seq, c_seq = lutra.now() - t0, os.clock() - c0

-- 2. One process per job.
t0, c0 = lutra.now(), os.clock()
local procs = {}
for i = 1, jobs do procs[i] = lutra.spawn(estimate_pi, i, samples) end
local parallel = {}
for i = 1, jobs do parallel[i] = procs[i]:join() end
local t_par, c_par = lutra.now() - t0, os.clock() - c0

for i = 1, jobs do
  print(string.format("  process %2d: pi ~ %.6f", i, parallel[i]))
  assert(parallel[i] == sequential[i], "a process computed a different result")
end

local function busy(cpu, wall) return wall > 0 and cpu / wall or 0 end
print(string.format("one process, jobs in turn: %6.2f s  (%.2f cores busy)", t_seq, busy(c_seq, t_seq)))
print(string.format("%2d processes in parallel:  %6.2f s  (%.2f cores busy)", jobs, t_par, busy(c_par, t_par)))
if t_par > 0 then
  print(string.format("speedup: %.2fx on %d cores", t_seq / t_par, lutra.workers()))
end
print("results match: yes")

local busy_end, cores = busy_seconds()
if busy_start and busy_end then
  local wall = lutra.now() - wall_start
  local foreign = math.max(0, (busy_end - busy_start) - (os.clock() - own_start)) / wall
  if foreign > 0.25 * cores then
    print(string.format("machine: BUSY: other programs kept %.2f of %d cores busy during this run;"
      .. " the speedup above is lower than on an idle machine", foreign, cores))
  else
    print(string.format("machine: quiet (other programs used %.2f of %d cores)", foreign, cores))
  end
end
