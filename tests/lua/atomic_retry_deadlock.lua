-- expect-exit: 2
-- expect-stderr: deadlock
-- expect-stderr: lutra.retry
-- A transaction that retries on a condition nobody will ever make true is reported
-- as a deadlock (it waits parked, so the runtime can tell).
local s = lutra.shared({ ready = false })
lutra.atomic(function()
  if not s.ready then lutra.retry() end
end)
