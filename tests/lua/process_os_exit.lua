-- expect-exit: 3
-- expect-stdout: printed before the exit
-- expect-stdout: written by io.write
-- expect-stderr: failed: process_os_exit.lua:8: unjoined failure
-- `os.exit(n)` in any process ends the program with status n at once, as under
-- luaproc: the other processes stop where they are. Nothing
-- already written is lost, and processes that failed unjoined are still reported.
lutra.spawn(function() error("unjoined failure") end)
lutra.wait()
lutra.spawn(function() while true do lutra.yield() end end) -- stopped by the exit
print("printed before the exit")
io.write("written by io.write\n")
lutra.spawn(function() os.exit(3) end)
lutra.receive() -- never returns: the exit ends the program
error("not reached")
