-- lutra-args: -w 1 --max-blocking-threads 0 --preempt 1000
-- `--max-blocking-threads 0`: no thread may take a blocked worker over, so with one
-- worker a process blocked in a C call keeps it. The reader runs a `cat` of a FIFO
-- with `os.execute` (a call known to block, which would hand the worker over at once
-- if any thread could take it): the process that would feed the FIFO cannot run until
-- the `cat` gives up (1 s) with nothing, and then finds no reader (its own `timeout`
-- gives up too). With 1 s slices the reader is not preempted before its call.
local fifo = os.tmpname()
os.remove(fifo)
assert(os.execute("mkfifo " .. fifo), "mkfifo failed")

local reader = lutra.spawn(function(path)
  local copy = path .. ".copy"
  os.execute("timeout 1 cat " .. path .. " > " .. copy)
  local file = assert(io.open(copy))
  local text = file:read("a")
  file:close()
  os.remove(copy)
  return text
end, fifo)

local writer = lutra.spawn(function(path)
  return os.execute("timeout 1 sh -c 'echo too-late > " .. path .. "'")
end, fifo)

local text, wrote = reader:join(), writer:join()
os.remove(fifo)
assert(text == "", "the reader got: " .. tostring(text))
assert(not wrote, "the writer found a reader")
