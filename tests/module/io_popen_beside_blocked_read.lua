-- expect-stdout: popen ok
-- Under the module, a process's io.popen does not wait for a stream that another
-- process is blocked reading (see tests/lua/io_popen_beside_blocked_read.lua): with
-- one worker (LUTRA_WORKERS=1) the writer runs only once the reader, blocked reading
-- the pipe of a `cat` of a FIFO, has handed the worker over; the writer's io.popen
-- must not wait for the reader's stream, whose read waits for the writer. Runs in a
-- child lua5.4 so that the environment can choose the runtime's options.
local lua = arg[-1]
local code = [[
local lutra = require "lutra"
assert(lutra.workers() == 1)
local fifo = os.tmpname()
os.remove(fifo)
assert(os.execute("mkfifo " .. fifo))
local reader = lutra.spawn(function(path)
  local pipe = assert(io.popen("timeout 20 cat " .. path))
  local text = pipe:read("a")
  pipe:close()
  return text
end, fifo)
local writer = lutra.spawn(function(path)
  local pipe = assert(io.popen("timeout 20 sh -c 'echo written-beside > " .. path .. "'"))
  return pipe:read("a"), pipe:close()
end, fifo)
local text, output, closed = reader:join(), writer:join()
os.remove(fifo)
print("reader got [" .. text .. "] writer [" .. output .. "] " .. tostring(closed))
]]

local script = os.tmpname()
assert(io.open(script, "w")):write(code):close()
local pipe = assert(io.popen("LUTRA_WORKERS=1 " .. lua .. " " .. script .. " 2>&1; echo \"status=$?\""))
local out = pipe:read("a")
pipe:close()
os.remove(script)
assert(out:find("reader got [written-beside\n] writer [] true", 1, true), out)
assert(out:find("status=0", 1, true), out)
print("popen ok")
