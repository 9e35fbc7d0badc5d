-- lutra-args: -w 1 --preempt 10000
-- A C call known to block hands its worker over before it blocks, not a threshold
-- after: blocking_handoff.lua with 10 s slices and a reader that gives up after 5 s.
-- The timer would look at the blocked worker only after 10 s, so the writer runs
-- within the reader's 5 s only because the reader's `os.execute` (of its `cat`)
-- handed the worker over at once; the writer's `os.execute` does the same, so the
-- reader gets its line back. Without the early hand-off the reader's `cat` gives up
-- with nothing, and the test fails.
GIVE_UP = 5
READ_BY_EXECUTE = true
local dir = (arg and arg[0] or ""):match("^(.-)[^/]*$")
dofile(dir .. "blocking_handoff.lua")
