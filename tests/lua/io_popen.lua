-- expect-stdout: before-the-command after-the-command
-- io.popen in a process behaves as lua5.4's: what the process wrote to a file (not
-- yet flushed) and to standard output comes before the command runs; both modes; the
-- results of close; the errors.
local path = os.tmpname()
local file = assert(io.open(path, "w"))
file:write("written-before-the-command")
local pipe = assert(io.popen("cat " .. path))
assert(pipe:read("a") == "written-before-the-command", "the file was not flushed first")
assert(io.type(pipe) == "file")
local ok, how, code = pipe:close()
assert(ok == true and how == "exit" and code == 0)
assert(io.type(pipe) == "closed file")
file:close()

-- Write mode: the command reads what the process writes.
local sink = assert(io.popen("cat > " .. path, "w"))
sink:write("through-the-pipe")
assert(sink:close())
local check = assert(io.open(path))
assert(check:read("a") == "through-the-pipe")
check:close()
os.remove(path)

-- A failing command: close answers as os.execute does.
local failing = assert(io.popen("exit 3"))
assert(failing:read("a") == "")
local ok3, how3, code3 = failing:close()
assert(ok3 == nil and how3 == "exit" and code3 == 3)

-- The mode is checked as lua5.4 checks it.
local bad, message = pcall(io.popen, "true", "rw")
assert(not bad and message:find("bad argument #2 to 'io.popen' %(invalid mode%)"), message)
local no_command, why = pcall(io.popen)
assert(not no_command and why:find("bad argument #1 to 'io.popen'"), why)

-- Standard output written before the command comes before the command's output
-- (the command writes to the same standard output: a pipe in "w" mode leaves it).
io.write("before-the-command ")
local echo = assert(io.popen("echo after-the-command", "w"))
assert(echo:close())

-- In another process too (every process's state has it).
local p = lutra.spawn(function()
  local inner = assert(io.popen("echo from-a-process"))
  local text = inner:read("a")
  inner:close()
  return text
end)
assert(p:join() == "from-a-process\n")
