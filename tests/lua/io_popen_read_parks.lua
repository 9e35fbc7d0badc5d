-- lutra-args: -w 1 --max-blocking-threads 0 --preempt 10000
-- A read of an `io.popen` pipe with nothing to read yet parks its process instead of
-- blocking its thread. With one worker and no thread allowed to take a blocked worker
-- over, two readers wait on the pipes of `cat`s of FIFOs, one in its main coroutine
-- and one inside a coroutine of its own (the park goes up through it), while the main
-- process, on the same worker, sees them waiting and feeds the FIFOs. Without the
-- park the first reader keeps the only worker: its `cat` gives up after 20 s with
-- nothing and the test fails.
-- Then: a reader parked on a pipe is cancelled (its read raises the cancellation), and
-- a read of a pipe opened for writing fails at once instead of waiting.
local function fifo()
  local path = os.tmpname()
  os.remove(path)
  assert(os.execute("mkfifo " .. path), "mkfifo failed")
  return path
end

local function read_pipe(path, in_coroutine)
  local pipe = assert(io.popen("timeout 20 cat " .. path))
  local function read() return pipe:read("a") end
  local text = in_coroutine and coroutine.wrap(read)() or read()
  assert(pipe:close())
  return text
end

-- Yields the worker until `p` waits on its pipe (a handshake: the reader runs only
-- when the main process yields).
local function until_parked(p)
  while true do
    local status, on = p:status()
    if status == "waiting" then
      assert(on == "io.popen pipe", "waits on " .. tostring(on))
      return
    end
    assert(status == "running", status)
    lutra.yield()
  end
end

local function feed(path, text)
  local file = assert(io.open(path, "w"))
  assert(file:write(text))
  file:close()
end

local paths = { fifo(), fifo() }
local readers = {
  lutra.spawn(read_pipe, paths[1], false),
  lutra.spawn(read_pipe, paths[2], true),
}
until_parked(readers[1])
until_parked(readers[2])
feed(paths[1], "first\n")
feed(paths[2], "second\n")
assert(readers[1]:join() == "first\n")
assert(readers[2]:join() == "second\n")

local path = fifo()
local cancelled = lutra.spawn(read_pipe, path, false)
until_parked(cancelled)
assert(cancelled:cancel("no longer needed"))
-- Ends the `cat` first: closing the pipe that the cancelled reader leaves to the
-- collector waits for its command, as lua5.4's does.
feed(path, "")
local ok, message = cancelled:join()
assert(ok == false and message:find("no longer needed", 1, true), tostring(message))

local written = lutra.spawn(function()
  local pipe = assert(io.popen("cat > /dev/null", "w"))
  local text, problem = pipe:read("l")
  assert(pipe:close())
  return text, problem
end)
local text, problem = written:join()
assert(text == nil and problem, "a read of a write-mode pipe: " .. tostring(text))

for _, p in ipairs({ paths[1], paths[2], path }) do os.remove(p) end
print("io_popen_read_parks ok")
