-- lutra-args: -w 1 --max-blocking-threads 0 --preempt 10000
-- A read of an `io.popen` pipe with nothing to read yet parks its process instead of
-- blocking its thread. With one worker and no thread allowed to take a blocked worker
-- over, three readers wait on the pipes of `cat`s of FIFOs, one in its main coroutine,
-- one inside a coroutine of its own (the park goes up through it) and one iterating
-- `pipe:lines`, while the main process, on the same worker, sees them waiting and
-- feeds the FIFOs. Without the
-- park the first reader keeps the only worker: its `cat` gives up after 20 s with
-- nothing and the test fails.
-- Then: a reader parked on a pipe is cancelled (its read raises the cancellation), a
-- read where the process cannot park blocks and answers, and a read of a pipe opened
-- for writing fails at once instead of waiting.
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

-- The lines of the pipe, through `pipe:lines`, whose reads park too.
local function read_lines(path)
  local pipe = assert(io.popen("timeout 20 cat " .. path))
  local lines = {}
  for line in pipe:lines() do lines[#lines + 1] = line end
  assert(pipe:close())
  return table.concat(lines, ",")
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

local paths = { fifo(), fifo(), fifo() }
local readers = {
  lutra.spawn(read_pipe, paths[1], false),
  lutra.spawn(read_pipe, paths[2], true),
  lutra.spawn(read_lines, paths[3]),
}
for _, reader in ipairs(readers) do until_parked(reader) end
feed(paths[1], "first\n")
feed(paths[2], "second\n")
feed(paths[3], "third\nfourth\n")
assert(readers[1]:join() == "first\n")
assert(readers[2]:join() == "second\n")
assert(readers[3]:join() == "third,fourth")

-- `pipe:lines` answers as lua5.4's iterator: formats, the end, a closed pipe.
local numbers = lutra.spawn(function()
  local pipe = assert(io.popen("printf '1 2\\n3'"))
  local got = {}
  for a, b in pipe:lines("n", "n") do got[#got + 1] = tostring(a) .. ":" .. tostring(b) end
  local after = pipe:lines()
  assert(pipe:close())
  local ok, problem = pcall(after)
  assert(not ok and problem == "file is already closed", tostring(problem))
  return table.concat(got, ",")
end)
assert(numbers:join() == "1:2,3:nil", "lines of numbers")

local path = fifo()
local cancelled = lutra.spawn(read_pipe, path, false)
until_parked(cancelled)
assert(cancelled:cancel("no longer needed"))
-- Ends the `cat` first: closing the pipe that the cancelled reader leaves to the
-- collector waits for its command, as lua5.4's does.
feed(path, "")
local ok, message = cancelled:join()
assert(ok == false and message:find("no longer needed", 1, true), tostring(message))

-- Where the process cannot park — inside a C function that calls back into Lua, or in
-- a coroutine resumed there — the read blocks its thread and still answers.
local unparkable = lutra.spawn(function()
  local function command_output(text)
    local pipe = assert(io.popen("echo " .. text))
    local output = pipe:read("a")
    assert(pipe:close())
    return output
  end
  local direct, nested
  table.sort({ 2, 1 }, function(a, b)
    direct = direct or command_output("in-a-comparator")
    nested = nested or coroutine.wrap(command_output)("in-a-coroutine-there")
    return a < b
  end)
  return direct, nested
end)
local direct, nested = unparkable:join()
assert(direct == "in-a-comparator\n" and nested == "in-a-coroutine-there\n", direct)

local written = lutra.spawn(function()
  local pipe = assert(io.popen("cat > /dev/null", "w"))
  local text, problem = pipe:read("l")
  assert(pipe:close())
  return text, problem
end)
local text, problem = written:join()
assert(text == nil and problem, "a read of a write-mode pipe: " .. tostring(text))

for _, p in ipairs({ paths[1], paths[2], paths[3], path }) do os.remove(p) end
print("io_popen_read_parks ok")
