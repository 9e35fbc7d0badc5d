-- lutra-args: -w 1 --stats
-- expect-stderr: threads started
-- A process blocked in a C call hands its worker over: with one worker, a process
-- blocked reading a FIFO gets its data only from another process, which can run only
-- if the blocked one's worker was taken over by another thread. The reader opens the
-- FIFO itself (`io.open`, which waits for a writer: a call Lutra does not know to
-- block), so its worker is taken over after the threshold. Without the hand-off the
-- reader waits forever, and the harness fails the test at its deadline.
-- A script that runs this one may set `GIVE_UP` first (how long the reader's `cat`
-- and the writer wait), and `READ_BY_EXECUTE` (the reader runs its `cat` with
-- `os.execute`, a call known to block, into a file).
local give_up = GIVE_UP or 30
local fifo = os.tmpname()
os.remove(fifo)
assert(os.execute("mkfifo " .. fifo), "mkfifo failed")

local reader = lutra.spawn(function(path, give_up, by_execute)
  local cat = "timeout " .. give_up .. " cat " .. path
  if by_execute then
    local copy = path .. ".copy"
    os.execute(cat .. " > " .. copy)
    local file = assert(io.open(copy))
    local text = file:read("a")
    file:close()
    os.remove(copy)
    return text
  end
  local file = assert(io.open(path))
  local text = file:read("a")
  file:close()
  return text
end, fifo, give_up, READ_BY_EXECUTE)

local writer = lutra.spawn(function(path, give_up)
  return os.execute("timeout " .. give_up .. " sh -c 'echo ran-beside-a-blocked-reader > "
    .. path .. "'")
end, fifo, give_up)

local text = reader:join()
local wrote = writer:join()
os.remove(fifo)
assert(wrote, "the writer could not reach the reader")
assert(text == "ran-beside-a-blocked-reader\n", "the reader got: " .. tostring(text))
