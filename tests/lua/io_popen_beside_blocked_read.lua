-- lutra-args: -w 1
-- A process's io.popen does not wait for a stream that another process is blocked
-- reading. The reader blocks reading the pipe of a `cat` of a FIFO (holding that
-- stream's lock) until the writer's command writes to the FIFO; the writer starts
-- that command with io.popen, which flushes the C streams first. lua5.4's flush
-- (`fflush(NULL)`) would wait for the reader's stream, whose read waits for the
-- writer: neither would move until `timeout` ended the `cat` (the reader then gets
-- nothing, and the test fails).
local fifo = os.tmpname()
os.remove(fifo)
assert(os.execute("mkfifo " .. fifo), "mkfifo failed")

local reader = lutra.spawn(function(path)
  local pipe = assert(io.popen("timeout 20 cat " .. path))
  local text = pipe:read("a")
  assert(pipe:close())
  return text
end, fifo)

-- With one worker, the writer runs only once the reader's blocked call has handed
-- the worker over.
local writer = lutra.spawn(function(path)
  local pipe = assert(io.popen("timeout 20 sh -c 'echo written-beside-a-blocked-read > " .. path .. "'"))
  local output = pipe:read("a")
  return output, pipe:close()
end, fifo)

local text = reader:join()
local output, closed = writer:join()
os.remove(fifo)
assert(output == "" and closed, "the writer's command failed")
assert(text == "written-beside-a-blocked-read\n", "the reader got: " .. tostring(text))
