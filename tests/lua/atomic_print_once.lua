-- lutra-args: -w 2
-- expect-stdout: line 1 of 40
-- expect-stdout: line 40 of 40
-- Output inside lutra.atomic makes the transaction irrevocable (seed 003: run it
-- exclusively rather than twice): under contention every print happens exactly once,
-- and the numbers printed are those committed (the runner checks the first and last
-- lines; `atomic_print_once` below counts the lines of one process).
local s = lutra.shared({ n = 0, printed = 0 })
local ps = {}
for i = 1, 4 do
  ps[i] = lutra.spawn(function(s)
    for _ = 1, 10 do
      lutra.atomic(function()
        s.n = s.n + 1
        print("line " .. s.n .. " of 40")
        s.printed = s.printed + 1
      end)
    end
  end, s)
end
for _, p in ipairs(ps) do p:join() end
assert(s.n == 40 and s.printed == 40)

-- A print inside atomic runs once: the attempt that printed is the one committed.
local attempts = 0
lutra.atomic(function()
  attempts = attempts + 1
  io.write("written once\n")
end)
assert(attempts == 1)
