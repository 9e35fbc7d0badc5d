-- expect-stdout: handoff ok
-- Under the module, a process blocked in a C call hands its worker over as under
-- `lutra`: with one worker (LUTRA_WORKERS=1), a process blocked reading a FIFO gets
-- its data only from another process, which can run only on the thread that took
-- the blocked one's worker over. The reader opens the FIFO itself (`io.open` waits
-- for a writer: a call not known to block, handed off after the threshold; without
-- the hand-off the run hangs and the test runner's timeout fails it), or runs a
-- `cat` of the FIFO with `os.execute` into a file (known to block: handed off at
-- once, also with 10 s slices). With LUTRA_MAX_BLOCKING_THREADS=0 no thread may: the
-- reader's `cat` gives up (after its timeout) with nothing. And a `pipe:read` with
-- nothing to read yet parks the reader instead, so the writer runs even then. Runs
-- in a child lua5.4 so that the environment can choose the runtime's options.
local lua = arg[-1]
local code = [[
local lutra = require "lutra"
assert(lutra.workers() == 1)
local give_up, how = ...
local fifo = os.tmpname()
os.remove(fifo)
assert(os.execute("mkfifo " .. fifo))
local reader = lutra.spawn(function(path, give_up, how)
  local cat = "timeout " .. give_up .. " cat " .. path
  if how == "execute" then
    local copy = path .. ".copy"
    os.execute(cat .. " > " .. copy)
    local file = assert(io.open(copy))
    local text = file:read("a")
    file:close()
    os.remove(copy)
    return text
  end
  if how == "open" then
    local file = assert(io.open(path))
    local text = file:read("a")
    file:close()
    return text
  end
  local pipe = assert(io.popen(cat))
  local text = pipe:read("a")
  pipe:close()
  return text
end, fifo, give_up, how)
local writer = lutra.spawn(function(path, give_up)
  return os.execute("timeout " .. give_up .. " sh -c 'echo ran-beside > " .. path .. "'")
end, fifo, give_up)
local text, wrote = reader:join(), writer:join()
os.remove(fifo)
print("reader got [" .. text .. "] writer " .. tostring(wrote))
]]

local script = os.tmpname()
assert(io.open(script, "w")):write(code):close()

local function run(env, give_up, how)
  local pipe = assert(io.popen(env .. " " .. lua .. " " .. script .. " " .. give_up
    .. " " .. how .. " 2>&1; echo \"status=$?\""))
  local out = pipe:read("a")
  pipe:close()
  return out
end

local out = run("LUTRA_WORKERS=1", 30, "open")
assert(out:find("reader got [ran-beside\n] writer true", 1, true), out)
assert(out:find("status=0", 1, true), out)
-- The reader's and the writer's `os.execute` are calls known to block: they hand
-- the worker over before they block, so the writer runs within the reader's 5 s
-- although, with 10 s slices, the timer would look only after 10 s.
out = run("LUTRA_WORKERS=1 LUTRA_PREEMPT=10000", 5, "execute")
assert(out:find("reader got [ran-beside\n] writer true", 1, true), out)
-- 1 s slices: the reader is not preempted before its call.
out = run("LUTRA_WORKERS=1 LUTRA_MAX_BLOCKING_THREADS=0 LUTRA_PREEMPT=1000", 1, "execute")
assert(out:find("reader got [] writer", 1, true), out)
-- A read of the pipe parks the reader, which needs no thread: the writer runs.
out = run("LUTRA_WORKERS=1 LUTRA_MAX_BLOCKING_THREADS=0 LUTRA_PREEMPT=10000", 20, "read")
assert(out:find("reader got [ran-beside\n] writer true", 1, true), out)
os.remove(script)
print("handoff ok")
