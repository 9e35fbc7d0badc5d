-- lutra-args: -w 1 --stats
-- expect-stderr: threads started
-- A process blocked in a C call hands its worker over: with one worker, a process
-- blocked reading a FIFO gets its data only from another process, which can run only
-- if the blocked one's worker was taken over by another thread. (Without the
-- hand-off the reader's `cat` gives up after 30 s with nothing, and the test fails.)
local fifo = os.tmpname()
os.remove(fifo)
assert(os.execute("mkfifo " .. fifo), "mkfifo failed")

local reader = lutra.spawn(function(path)
  local pipe = assert(io.popen("timeout 30 cat " .. path))
  local text = pipe:read("a")
  pipe:close()
  return text
end, fifo)

local writer = lutra.spawn(function(path)
  return os.execute("timeout 30 sh -c 'echo ran-beside-a-blocked-reader > " .. path .. "'")
end, fifo)

local text = reader:join()
local wrote = writer:join()
os.remove(fifo)
assert(wrote, "the writer could not reach the reader")
assert(text == "ran-beside-a-blocked-reader\n", "the reader got: " .. tostring(text))
