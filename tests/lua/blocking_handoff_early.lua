-- lutra-args: -w 1 --preempt 10000
-- A C call known to block hands its worker over before it blocks, not a threshold
-- after: with one worker and 10 s slices, the timer would look at the blocked worker
-- only after 10 s, so the writer below runs within the reader's 5 s only because
-- the reader's `pipe:read` (an `io.popen` pipe with nothing to read yet) handed the
-- worker over at once; the writer's `os.execute` does the same, so the reader gets
-- its line back. Without the early hand-off the reader's `cat` gives up after 5 s with
-- nothing, and the test fails.
local fifo = os.tmpname()
os.remove(fifo)
assert(os.execute("mkfifo " .. fifo), "mkfifo failed")

local reader = lutra.spawn(function(path)
  local pipe = assert(io.popen("timeout 5 cat " .. path))
  local text = pipe:read("a")
  pipe:close()
  return text
end, fifo)

local writer = lutra.spawn(function(path)
  return os.execute("timeout 5 sh -c 'echo written-while-the-reader-waited > " .. path .. "'")
end, fifo)

local text = reader:join()
local wrote = writer:join()
os.remove(fifo)
assert(wrote, "the writer could not reach the reader")
assert(text == "written-while-the-reader-waited\n", "the reader got: " .. tostring(text))
print("ok")
