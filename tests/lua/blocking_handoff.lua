-- lutra-args: -w 1 --stats
-- expect-stderr: threads started
-- A process blocked in a C call hands its worker over: with one worker, a process
-- blocked reading a FIFO gets its data only from another process, which can run only
-- if the blocked one's worker was taken over by another thread. (Without the
-- hand-off the reader's `cat` gives up after 30 s with nothing, and the test fails.)
-- How long the reader's `cat` and the writer wait (a script that runs this one may
-- set `GIVE_UP` first).
local give_up = GIVE_UP or 30
local fifo = os.tmpname()
os.remove(fifo)
assert(os.execute("mkfifo " .. fifo), "mkfifo failed")

local reader = lutra.spawn(function(path, give_up)
  local pipe = assert(io.popen("timeout " .. give_up .. " cat " .. path))
  local text = pipe:read("a")
  pipe:close()
  return text
end, fifo, give_up)

local writer = lutra.spawn(function(path, give_up)
  return os.execute("timeout " .. give_up .. " sh -c 'echo ran-beside-a-blocked-reader > "
    .. path .. "'")
end, fifo, give_up)

local text = reader:join()
local wrote = writer:join()
os.remove(fifo)
assert(wrote, "the writer could not reach the reader")
assert(text == "ran-beside-a-blocked-reader\n", "the reader got: " .. tostring(text))
