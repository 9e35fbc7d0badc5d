-- lutra-args: --stats
-- expect-stderr: transactions
-- expect-stderr: cli_stats_atomic.lua:
-- --stats names each `atomic` site (file:line) with its commits and aborts.
local s = lutra.shared({ n = 0 })
lutra.atomic(function(s) s.n = s.n + 1 end, s)
assert(s.n == 1)
