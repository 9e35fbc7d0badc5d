-- expect-exit: 1
-- expect-stderr: process#2
-- expect-stderr: failed: 
-- expect-stderr: nobody joined me
-- expect-stdout: main finished
-- An uncaught error in a process nobody joins is reported at exit (status 1), and
-- does not stop the main script or other processes.
lutra.spawn(function() error("nobody joined me") end)
local ok = lutra.spawn(function() lutra.sleep(0.05) return "still fine" end):join()
assert(ok == "still fine")
print("main finished")
