-- expect-stdout: handoff ok
-- Under the module, a process blocked in a C call hands its worker over as under
-- `lutra`: with one worker (LUTRA_WORKERS=1), a process blocked reading a FIFO gets
-- its data only from another process, which can run only on the thread that took
-- the blocked one's worker over. With LUTRA_MAX_BLOCKING_THREADS=0 no thread may:
-- the reader's `cat` gives up (after its timeout) with nothing. With 10 s slices the
-- hand-off still comes at once: the calls are known to block. Runs in a child
-- lua5.4 so that the environment can choose the runtime's options.
local lua = arg[-1]
local code = [[
local lutra = require "lutra"
assert(lutra.workers() == 1)
local give_up = ...
local fifo = os.tmpname()
os.remove(fifo)
assert(os.execute("mkfifo " .. fifo))
local reader = lutra.spawn(function(path, give_up)
  local pipe = assert(io.popen("timeout " .. give_up .. " cat " .. path))
  local text = pipe:read("a")
  pipe:close()
  return text
end, fifo, give_up)
local writer = lutra.spawn(function(path, give_up)
  return os.execute("timeout " .. give_up .. " sh -c 'echo ran-beside > " .. path .. "'")
end, fifo, give_up)
local text, wrote = reader:join(), writer:join()
os.remove(fifo)
print("reader got [" .. text .. "] writer " .. tostring(wrote))
]]

local script = os.tmpname()
assert(io.open(script, "w")):write(code):close()

local function run(env, give_up)
  local pipe = assert(io.popen(env .. " " .. lua .. " " .. script .. " " .. give_up
    .. " 2>&1; echo \"status=$?\""))
  local out = pipe:read("a")
  pipe:close()
  return out
end

local out = run("LUTRA_WORKERS=1", 30)
assert(out:find("reader got [ran-beside\n] writer true", 1, true), out)
assert(out:find("status=0", 1, true), out)
-- The reader's read of its `io.popen` pipe and the writer's `os.execute` are calls
-- known to block: they hand the worker over before they block, so the writer runs
-- within the reader's 5 s although, with 10 s slices, the timer would look only
-- after 10 s.
out = run("LUTRA_WORKERS=1 LUTRA_PREEMPT=10000", 5)
assert(out:find("reader got [ran-beside\n] writer true", 1, true), out)
-- 1 s slices: the reader is not preempted between starting `cat` and reading its
-- pipe (which would let the writer in beside a live `cat`).
out = run("LUTRA_WORKERS=1 LUTRA_MAX_BLOCKING_THREADS=0 LUTRA_PREEMPT=1000", 1)
assert(out:find("reader got [] writer", 1, true), out)
os.remove(script)
print("handoff ok")
