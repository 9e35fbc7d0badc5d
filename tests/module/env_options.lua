-- expect-stdout: env ok
-- LUTRA_* environment variables get the `lutra` program's checks: a refused value
-- makes `require "lutra"` fail with the variable's name and
-- the reason, instead of being ignored; good values are used.
local lua = arg[-1]

-- Runs `code` in a fresh lua5.4 with `env` set; returns its output and exit status.
local function run(env, code)
  local pipe = assert(io.popen(env .. " " .. lua .. " -e '" .. code .. "' 2>&1; echo \"status=$?\""))
  local out = pipe:read("a")
  pipe:close()
  return out, tonumber(out:match("status=(%d+)"))
end

local refused = {
  { "LUTRA_WORKERS=abc", "not a worker count" },
  { "LUTRA_WORKERS=0", "at least 1" },
  { "LUTRA_WORKERS=-3", "not a worker count" },
  { "LUTRA_WORKERS=65535", "at most 1024" },
  { "LUTRA_MEMORY_LIMIT=lots", "not a size in bytes" },
  { "LUTRA_PREEMPT=often", "not a time slice" },
  { "LUTRA_PREEMPT=100000", "not a time slice" },
  { "LUTRA_MAILBOX_CAP=-1", "not a message count" },
  { "LUTRA_MAX_BLOCKING_THREADS=lots", "not a thread count" },
  { "LUTRA_MAX_BLOCKING_THREADS=5000", "not a thread count" },
}
for _, case in ipairs(refused) do
  local env, reason = case[1], case[2]
  local out, status = run(env, 'require "lutra"')
  assert(status ~= 0, env .. " accepted:\n" .. out)
  assert(out:find(env, 1, true) and out:find(reason, 1, true), env .. ":\n" .. out)
end

local out, status = run("LUTRA_WORKERS=3 LUTRA_MAILBOX_CAP=0 LUTRA_PREEMPT=0 LUTRA_MEMORY_LIMIT=64M",
  'local l = require "lutra" assert(l.workers() == 3) print("workers", l.workers())')
assert(status == 0 and out:find("workers\t3", 1, true), out)
print("env ok")
