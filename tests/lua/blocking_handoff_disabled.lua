-- lutra-args: -w 1 --max-blocking-threads 0 --preempt 1000
-- `--max-blocking-threads 0`: no thread may take a blocked worker over, so with one
-- worker a process blocked reading a FIFO keeps it: the process that would feed the
-- FIFO cannot run until the reader's `cat` gives up (1 s) with nothing, and then
-- finds no reader (its own `timeout` gives up too). With 1 s slices the reader is
-- not preempted between starting `cat` and reading its pipe (which would let the
-- writer in beside a live `cat`); its read, a call known to block, would hand the
-- worker over at once if any thread could take it.
local fifo = os.tmpname()
os.remove(fifo)
assert(os.execute("mkfifo " .. fifo), "mkfifo failed")

local reader = lutra.spawn(function(path)
  local pipe = assert(io.popen("timeout 1 cat " .. path))
  local text = pipe:read("a")
  pipe:close()
  return text
end, fifo)

local writer = lutra.spawn(function(path)
  return os.execute("timeout 1 sh -c 'echo too-late > " .. path .. "'")
end, fifo)

local text, wrote = reader:join(), writer:join()
os.remove(fifo)
assert(text == "", "the reader got: " .. tostring(text))
assert(not wrote, "the writer found a reader")
