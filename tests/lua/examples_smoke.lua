-- Every program in examples/ runs with small sizes and prints what it should.
-- Each runs as a process from its source text, with its arguments as `...`.
-- expect-stdout: cores.lua: 2 jobs of 100000 samples each
-- expect-stdout: results match: yes
-- expect-stdout: fib(15) = 610; 20 answers, sum 12200
-- expect-stdout: 4000 words, 207 distinct
-- expect-stdout: most distinct words: doc4 (102)
-- expect-stdout: log2:2188: 002188 ERROR disk /dev/sda full (90% used)
-- expect-stdout: 6 matching lines in 2 files (2 searchers)
-- expect-stdout: 1 matching lines in 1 files (1 searchers)
-- expect-stdout: all 60 items consumed exactly once (sum 630)
-- expect-stdout: total 8000 (expected 8000): conserved
-- expect-stdout: worker failed (bad input 7); restarting it
-- expect-stdout: 2 restarts; 18 of 20 jobs done, sum of squares 2625
-- expect-stdout: found 1234567 (worker
-- expect-stdout: every worker has stopped

local EXAMPLES = "../../examples/"

local function run(name, ...)
  local f = assert(io.open(EXAMPLES .. name, "rb"))
  local source = f:read("a")
  f:close()
  local p = lutra.spawn(source, ...)
  local ok, err = pcall(p.join, p)
  assert(ok, name .. " failed: " .. tostring(err))
end

run("cores.lua", "2", "200000")
run("fib_hub.lua", "15", "20", "3")
run("word_count.lua", "--generate", "4", "1000", "2")
run("word_count.lua", EXAMPLES .. "cores.lua", EXAMPLES .. "bank.lua")
run("parallel_grep.lua", "--demo", "2", "3000")
run("parallel_grep.lua", "--plain", "local function write_log(", EXAMPLES .. "parallel_grep.lua")
run("producer_consumer.lua", "20", "3", "5")

run("bank.lua", "8", "3", "300")
run("supervisor.lua", "20", "7")
run("first_answer.lua", "3", "2000000", "1234567")
print("examples ok")
