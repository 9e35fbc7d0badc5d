-- lutra-args: -w 2
-- A shared counter incremented inside lutra.atomic by 16 processes loses nothing;
-- outside atomic each access is its own transaction (s.n = s.n + 1 is two), which is
-- why the increments use atomic.
local s = lutra.shared({ n = 0 })
local ps = {}
for i = 1, 16 do
  ps[i] = lutra.spawn(function(s)
    for _ = 1, 500 do lutra.atomic(function() s.n = s.n + 1 end) end
  end, s)
end
for _, p in ipairs(ps) do p:join() end
assert(s.n == 16 * 500, s.n)
