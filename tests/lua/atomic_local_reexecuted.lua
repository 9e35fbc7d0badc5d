-- lutra-args: -w 2
-- Changes to process-local values inside lutra.atomic are not transactional: an
-- attempt that is re-run (after a conflict, or after lutra.retry wakes it) runs them
-- again. Here a local counter counts the attempts of a transaction that retries until
-- another process sets a flag: the transaction ran more than once, the shared effect
-- happened once.
local s = lutra.shared({ ready = false, done = 0 })
local p = lutra.spawn(function(s)
  local attempts = 0
  local log = {}
  lutra.atomic(function()
    attempts = attempts + 1
    log[#log + 1] = "attempt " .. attempts
    if not s.ready then lutra.retry() end
    s.done = s.done + 1
  end)
  return attempts, #log
end, s)
lutra.sleep(0.05)
s.ready = true
local attempts, logged = p:join()
assert(attempts >= 2, "the retried transaction ran again: " .. attempts)
assert(logged == attempts, "the local log grew on every attempt")
assert(s.done == 1, "the shared effect happened once")
