-- The Lua half of shared tables and transactions: `lutra.shared`, `lutra.atomic`,
-- `lutra.retry`, `lutra.or_else`; the `__newindex` of shared handles; the wrappers
-- that keep a doomed attempt from running on (pcall, xpcall, coroutine.resume) and
-- make an attempt irrevocable before it does what cannot be undone (output, channel
-- and mailbox operations, spawn).
--
-- Invariants:
-- - `inside` is true exactly while this process runs the Lua code of an `atomic`
--   attempt: set by `attempt`, cleared by it when its body returns and, however the
--   attempt ended (an error or a cancellation raised in `attempt` outside its
--   `pcall`), by `lutra.atomic` once `raw.atomic_run` returns, which it always does
--   with a status.
-- - An attempt that is doomed never runs user code past a protected call: every
--   shared-table access raises again, and the wrapped pcall / xpcall /
--   coroutine.resume raise ABORTED when the attempt is doomed, whatever they caught.
-- - Wrappers tail-call what they wrap, so errors raised "at the caller" (level 2)
--   still name the user's line.
-- - A nested call's checkpoint is kept only by the native call that returns the
--   nested call's results; one an error left open is undone by the wrapped pcall /
--   xpcall / coroutine.resume that catches the error, or with the whole attempt.

-- HOST: installed into a host's state (a stock `lua` that loaded the module), whose
-- globals are left alone: there, pcall inside `atomic` is not watched and output does
-- not make the transaction irrevocable.
local raw, exports, HOST = ...
local lutra, Channel, Process = exports.lutra, exports.channel, exports.process
local wait, raise = exports.internal.wait, exports.internal.raise

local pack, unpack, error, type = table.pack, table.unpack, error, type
local base_pcall, base_xpcall, co_resume = pcall, xpcall, coroutine.resume
local getinfo, getmetatable = debug.getinfo, getmetatable
local doomed, irrevocable, checkpoint, close = raw.atomic_doomed, raw.atomic_irrevocable,
  raw.atomic_checkpoint, raw.atomic_close
local depth_now, results = raw.atomic_depth, raw.atomic_results

-- Raised to end a doomed attempt; `lutra.atomic` never lets it out.
local ABORTED = setmetatable({}, {
  __name = "lutra.aborted",
  __tostring = function() return "lutra: transaction attempt aborted (lutra.atomic runs it again)" end,
})

local inside = false
-- The coroutine that runs the attempt (while `inside`): it cannot yield, since the
-- attempt runs inside a Rust call.
local attempt_co = nil
local co_running = coroutine.running

local YIELD_REFUSED = "coroutine.yield inside lutra.atomic: a transaction cannot be "
  .. "suspended halfway (yield before or after lutra.atomic, or in a coroutine created "
  .. "inside it)"
-- What Lua says of such a yield (in a coroutine; in a host's main thread).
local YIELD_ERRORS = {
  ["attempt to yield across a C-call boundary"] = true,
  ["attempt to yield from outside a coroutine"] = true,
}

-- The end of every attempt: what `base_pcall` returned. A yield of the attempt's own
-- coroutine (the stock `coroutine.yield` of a host, which is not wrapped) is reported
-- as what it is.
local function attempt_end(ok, ...)
  inside, attempt_co = false, nil
  if not ok and YIELD_ERRORS[(...)] then return false, YIELD_REFUSED end
  return ok, ...
end

-- The body of every attempt, called by `raw.atomic_run` (from Rust): `true` and
-- `f`'s results, or `false` and its error.
local function attempt(f, ...)
  inside, attempt_co = true, co_running()
  return attempt_end(base_pcall(f, ...))
end

-- Shared tables ------------------------------------------------------------------------

-- Raises `problem` (a string) at the user's line that called the API function (the
-- caller of `checked`) when `value` is nil.
local function checked(value, problem)
  if value == nil and problem ~= nil then raise(problem, 2) end
  return value
end

function lutra.shared(t)
  return checked(raw.shared_new(t))
end

function lutra.is_shared(value)
  return raw.is_shared(value)
end

local shared_set = raw.shared_set
local function newindex(t, k, v)
  local ok, problem = shared_set(t, k, v)
  if not ok then error(problem, 2) end
end

-- Transactions -------------------------------------------------------------------------

local site_of_function = setmetatable({}, { __mode = "k" })
local site_of_name = {}

-- The statistics site of `f`: where it is defined.
local function site_of(f)
  local site = site_of_function[f]
  if site then return site end
  local name = "?"
  if type(f) == "function" then
    local info = getinfo(f, "S")
    name = info.short_src .. ":" .. (info.linedefined or 0)
  end
  site = site_of_name[name]
  if not site then
    site = raw.atomic_site(name)
    site_of_name[name] = site
  end
  site_of_function[f] = site
  return site
end

local function callable(f)
  if type(f) == "function" then return true end
  local mt = getmetatable(f)
  return type(mt) == "table" and mt.__call ~= nil
end

-- A nested `atomic` joins the running attempt; an error inside it undoes its writes
-- (the attempt goes on only if the error is caught). Its checkpoint is kept by the
-- tail call that returns its results, the last thing the call does: an error raised
-- before it (by a debug hook, or for memory) leaves the checkpoint open, and the
-- protected call that catches the error undoes it (`protected`, below).
local function nested_end(depth, ok, ...)
  if ok then return close(depth, false, ...) end
  if not doomed() then close(depth, true) end
  error((...), 0)
end

function lutra.atomic(f, ...)
  if inside then
    return nested_end(checkpoint(), base_pcall(f, ...))
  end
  if not callable(f) then
    raise("bad argument #1 to 'atomic' (function expected, got " .. type(f) .. ")", 1)
  end
  local site = site_of(f)
  -- `value`: the error (status "error"), or the key of the results ("ok").
  local status, value = raw.atomic_run(site, attempt, f, ...)
  if status == "nested" then
    -- Called while an attempt runs but `inside` is false already (a debug hook or a
    -- finalizer running as the attempt ends): the call joins the attempt.
    return nested_end(checkpoint(), base_pcall(f, ...))
  end
  while true do
    -- The attempt has ended: also when a cancellation stopped `attempt` outside its
    -- `pcall`, before it could say so itself.
    inside, attempt_co = false, nil
    -- A tail call to the native function that hands the results over: no table
    -- holds them.
    if status == "ok" then return results(value) end
    if status == "error" then error(value, 0) end
    if status == "retry" then
      local problem = wait("lutra.retry (a change to the shared tables it read)")
      if problem then error(problem, 2) end
    else
      lutra.yield()
    end
    status, value = raw.atomic_again(site, attempt, f, ...)
  end
end

function lutra.retry()
  if not inside then raise("lutra.retry() called outside lutra.atomic", 1) end
  raw.atomic_retry()
  error(ABORTED, 0)
end

local function or_else_end(depth, g, args, ok, ...)
  if ok then return close(depth, false, ...) end
  local reason = doomed()
  if reason == "retry" then
    close(depth, true)
    return g(unpack(args, 1, args.n))
  end
  if not reason then close(depth, true) end
  error((...), 0)
end

function lutra.or_else(f, g, ...)
  if not callable(f) or not callable(g) then
    local n, h = 1, f
    if callable(f) then n, h = 2, g end
    raise("bad argument #" .. n .. " to 'or_else' (function expected, got " .. type(h) .. ")", 1)
  end
  if not inside then return lutra.atomic(lutra.or_else, f, g, ...) end
  return or_else_end(checkpoint(), g, pack(...), base_pcall(f, ...))
end

function lutra.in_atomic()
  return inside
end

if HOST then return { newindex = newindex } end

-- A doomed attempt cannot be kept running ----------------------------------------------

-- What a protected call inside an attempt returns: the call's results, unless the
-- attempt is doomed. A caught error ended every nested `atomic` (or `or_else`
-- function) it came out of, including one whose function had returned when the error
-- was raised, before its checkpoint was kept: the checkpoints opened since the call
-- began (`depth` were open then) and still open are undone.
local function protected(depth, ok, ...)
  if inside then
    if doomed() then error(ABORTED, 0) end
    if not ok then close(depth + 1, true) end
  end
  return ok, ...
end

function pcall(f, ...)
  if not inside then return base_pcall(f, ...) end
  return protected(depth_now(), base_pcall(f, ...))
end

function xpcall(f, handler, ...)
  if not inside then return base_xpcall(f, handler, ...) end
  return protected(depth_now(), base_xpcall(f, handler, ...))
end

function coroutine.resume(co, ...)
  if not inside then return co_resume(co, ...) end
  return protected(depth_now(), co_resume(co, ...))
end

local co_yield = coroutine.yield
function coroutine.yield(...)
  if inside and co_running() == attempt_co then raise(YIELD_REFUSED, 1) end
  return co_yield(...)
end

-- What cannot be undone makes the attempt irrevocable (seed 003) -------------------------

local function irrevocably(f)
  return function(...)
    if inside then irrevocable() end
    return f(...)
  end
end

print = irrevocably(print)
io.write = irrevocably(io.write)
local file_methods = getmetatable(io.stdout).__index
file_methods.write = irrevocably(file_methods.write)
for _, name in ipairs({ "send", "receive", "try_receive", "close" }) do
  Channel[name] = irrevocably(Channel[name])
end
Process.send = irrevocably(Process.send)
lutra.spawn = irrevocably(lutra.spawn)
lutra.spawn_link = irrevocably(lutra.spawn_link)
lutra.spawn_monitor = irrevocably(lutra.spawn_monitor)
lutra.monitor = irrevocably(lutra.monitor)
Process.cancel = irrevocably(Process.cancel)
lutra.receive = irrevocably(lutra.receive)
lutra.select = irrevocably(lutra.select)

return { newindex = newindex }
