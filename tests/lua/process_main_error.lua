-- expect-exit: 1
-- expect-stderr: main script failure
-- expect-stderr: stack traceback:
-- expect-stderr: process_main_error.lua:7
-- expect-stdout: before the error
print("before the error")
error("main script failure")
