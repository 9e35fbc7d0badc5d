-- The Lua half of the `lutra` library: loops that poll the raw (never-blocking)
-- functions and park when told to wait; the process-aware `coroutine.resume`,
-- `coroutine.wrap` and `print`; the body of every process's main coroutine.
--
-- Invariant: a scheduler yield (a blocking call's PARK, a preemption) travels from
-- the coroutine that made it up to the process's main coroutine, through every user
-- coroutine in between, and each of them is resumed again on the way back down, so a
-- user's coroutine never sees (or swallows) a yield that was not its own.

-- HOST: installed into a host's state (a stock `lua` that loaded the module), whose
-- globals (`print`, `coroutine`) are left alone. CANCEL: what a cancelled process is
-- resumed with (process/cancel.rs): its blocking call, `lutra.yield` or
-- `coroutine.yield` raises.
local raw, PARK, PREEMPTED, HOST, CANCEL = ...

-- raw.resume is the stock coroutine.resume that also tells the preemption signal
-- handler which coroutine runs (see process/preempt.rs).
local co_create, co_resume, co_yield = coroutine.create, raw.resume, coroutine.yield
local co_status, co_isyieldable, co_close = coroutine.status, coroutine.isyieldable, coroutine.close
local pack, unpack, select, error, type, tostring = table.pack, table.unpack, select, error, type, tostring
local traceback, getinfo = debug.traceback, debug.getinfo

-- Resumed into a coroutine whose scheduler yield could not go further up.
local CANNOT = setmetatable({}, { __name = "lutra.cannot_block" })

local lutra = {}
local Channel = {}
local Process = {}

-- The label of a wait on `what` and `object` (a channel, a process, a channel's name
-- or nothing), as deadlock reports and errors show it: built only when shown.
local label = raw.wait_label

-- The first words of the labels of the waits below, and (`text`) the error texts:
-- each written once, in Rust (api/texts.rs), for these loops and the native paths.
local LABELS = raw.wait_labels
local function text(name, ...) return raw.text(name, ...) end

-- Parks the caller until something it registered with wakes it. Returns nil, or a
-- message saying why it cannot block here. What it waits on is `what` followed by
-- `object` (see `label`); the runtime keeps the pair and builds the text only when
-- the same pair was not the last one it saw.
local function park(what, object)
  local refused = raw.prepare_park(what, object)
  if refused == "atomic" then
    return text("cannot_block_in_atomic", label(what, object))
  end
  if refused == "host" then
    -- A host thread: park the OS thread (returns a report if nothing can wake it).
    return raw.park_thread(label(what, object))
  end
  if not co_isyieldable() then
    raw.note_wait(nil)
    return text("cannot_block_in_c", label(what, object))
  end
  -- The task clears the noted wait when it is resumed after parking.
  local answer = co_yield(PARK)
  if answer == CANCEL then
    return raw.cancel_message()
  end
  if answer == CANNOT then
    raw.note_wait(nil)
    return text("cannot_reach_scheduler", label(what, object))
  end
  return nil
end

-- `park`, and when the caller cannot block after all, it leaves the channels it had
-- registered on as a receiver (its blocking call ends in an error): a wake-up handed
-- to it meanwhile passes to another receiver.
local function wait(what, object)
  local problem = park(what, object)
  if problem then raw.leave_channels() end
  return problem
end

local base_pcall = pcall

-- Waits (as `wait`, on `what` and `object`) in the send of message `sequence` on
-- `target` (a channel, or a process: its mailbox); false when woken (poll again).
-- When the wait fails — the caller cannot block, or an error (out of memory) is raised
-- while it waits — the message is taken back first, so that a send that fails
-- delivers nothing: then true if the send completed after all, else the problem is
-- raised at `level` (seen from the caller of `send_wait`).
local function send_wait(what, object, target, sequence, level)
  local ok, problem = base_pcall(wait, what, object)
  if ok and not problem then return false end
  if raw.channel_withdraw(target, sequence) then return true end
  if ok then error(problem, level + 1) end
  error(problem, 0)
end

local raise -- below, beside `where`

-- Raises luaL_argerror's message for argument `n` of the API function `name`, at the
-- position of whoever called that function (the nearest user line: see `raise`);
-- `level` is where the API function is on the stack, seen from the caller of
-- arg_error (1: the caller itself).
local function arg_error(level, n, name, expected, got)
  raise("bad argument #" .. n .. " to '" .. name .. "' (" .. expected .. " expected, got "
    .. got .. ")", level + 1)
end

-- The deadline `timeout` seconds from now for the API function `name` (its argument
-- `n`): nil for no timeout; a negative timeout is 0 (answer at once); a huge or
-- infinite one waits (nearly) forever. A timeout that is not a number, or NaN, is a
-- bad argument of the API function (which calls this directly, or `extra` levels
-- below).
local function deadline_of(timeout, n, name, extra)
  if timeout == nil then return nil end
  local level = 2 + (extra or 0)
  if type(timeout) ~= "number" then arg_error(level, n, name, "number", type(timeout)) end
  if timeout ~= timeout then arg_error(level, n, name, "number", "NaN") end
  return raw.now() + (timeout > 0 and timeout or 0)
end

-- The runtime's own chunks (their names as `short_src` shows them).
local INTERNAL = {
  ["lutra"] = true, ["lutra.shared"] = true, ["lutra.transfer"] = true, ["luaproc"] = true,
}

-- `file.lua:line` of the first frame of user Lua code at or above `level` (seen from
-- the caller of `where`): C functions (`pcall(lutra.spawn, f)`) and the runtime's own
-- chunks are skipped; "?" when there is none.
local function where(level)
  level = level + 1
  while true do
    local info = getinfo(level, "Sl")
    if not info then return "?" end
    if info.what ~= "C" and not INTERNAL[info.short_src] then
      return info.short_src .. ":" .. (info.currentline or 0)
    end
    level = level + 1
  end
end

-- Raises `problem` (a string) at the first frame of user Lua code at or above `level`
-- (seen from the caller of `raise`, as `where` counts): the user's line, also when the
-- user's function tail-called the API function or called it through `pcall`.
function raise(problem, level)
  local at = where(level + 1)
  if at ~= "?" then problem = at .. ": " .. problem end
  error(problem, 0)
end

-- Coroutines --------------------------------------------------------------------------

-- Handles what `co_resume(co, ...)` returned: passes scheduler yields up (PARK, or
-- PREEMPTED, which co_resume returns for a preemption's bare yield) and resumes `co`
-- again with what came back down.
local function relay(co, ok, first, ...)
  if ok and (first == PARK or first == PREEMPTED) and co_status(co) == "suspended" then
    if co_isyieldable() then
      if first == PARK then
        return relay(co, co_resume(co, co_yield(first, ...)))
      end
      raw.request_yield()
      return relay(co, co_resume(co, co_yield()))
    end
    if first == PARK then
      return relay(co, co_resume(co, CANNOT))
    end
    return relay(co, co_resume(co))
  end
  return ok, first, ...
end

if not HOST then
  -- A yield at the top of a process is a safe point: cancelled, it raises
  -- (process/cancel.rs); elsewhere the stock yield.
  coroutine.yield = raw.checked_yield

  function coroutine.resume(co, ...)
    return relay(co, co_resume(co, ...))
  end

  function coroutine.wrap(f)
    local co = co_create(f)
    local function unwrap(ok, ...)
      if ok then return ... end
      local message = ...
      co_close(co)
      error(message, 0)
    end
    return function(...)
      return unwrap(relay(co, co_resume(co, ...)))
    end
  end
end

-- Yields the worker to other processes (the process stays runnable).
function lutra.yield()
  if raw.in_task() and co_isyieldable() then
    raw.request_yield()
    if co_yield() == CANCEL then error(raw.cancel_message(), 2) end
  end
end

-- Processes ----------------------------------------------------------------------------

-- Raises `problem` (a string) at the user's line that called the API function (the
-- caller of `checked`) when `value` is nil.
local function checked(value, problem)
  if value == nil and problem ~= nil then raise(problem, 2) end
  return value
end

function lutra.spawn(code, ...)
  return checked(raw.spawn(code, where(2), ...))
end

-- Spawns as lutra.spawn does, linked with the caller: when either fails or is
-- cancelled, the other is cancelled (process/watch.rs).
function lutra.spawn_link(code, ...)
  return checked(raw.spawn_linked(code, where(2), ...))
end

-- Spawns as lutra.spawn does, monitored by the caller from before its first slice
-- (as lutra.monitor(lutra.spawn(...)), without the window in which it could end
-- unwatched).
function lutra.spawn_monitor(code, ...)
  return checked(raw.spawn_monitored(code, where(2), ...))
end

function lutra.self()
  return raw.self()
end

-- The caller receives {"down", p, status, value_or_error...} in its mailbox once `p`
-- has ended (at once if it has); once per call.
function lutra.monitor(p)
  checked(raw.monitor(p)) -- not a tail call (`checked`'s level)
  return p
end

-- `lutra.receive` and `Process.send` are the fallbacks of their native fast paths
-- (api/native/mailbox.rs), which call them with the same arguments: their errors are
-- raised one level further up (the native function's caller).
function lutra.receive(timeout)
  local deadline = deadline_of(timeout, 1, "receive", 1)
  while true do
    local r = pack(raw.mailbox_poll(deadline, true))
    if r[1] == "ok" then return unpack(r, 2, r.n) end
    if r[1] == "timeout" then return nil, "timeout" end
    local problem = wait(LABELS.mailbox)
    if problem then error(problem, 3) end
  end
end

-- Waits until every process other than the caller has finished (luaproc's `wait`).
function lutra.wait()
  while not raw.wait_poll() do
    local problem = wait("the other processes to finish (lutra.wait)")
    if problem then error(problem, 2) end
  end
end

-- Seconds on a monotonic clock (for elapsed times; the origin is arbitrary).
function lutra.now()
  return raw.now()
end

-- The number of workers the runtime runs processes on.
function lutra.workers()
  return raw.workers()
end

function lutra.sleep(seconds)
  local deadline = deadline_of(seconds or 0, 1, "sleep")
  while raw.now() < deadline do
    raw.wake_at(deadline)
    local problem = wait("lutra.sleep")
    if problem then error(problem, 2) end
  end
end

-- The results of `p`, or `false, "cancelled: reason"` for a cancelled `p`, or `nil,
-- "timeout"` once `timeout` seconds have passed (`p` goes on running); raises when
-- `p` failed.
function Process.join(p, timeout)
  if rawequal(p, raw.self()) then
    raise("bad argument #1 to 'join' (a process cannot join itself: it would wait forever)", 1)
  end
  local deadline = deadline_of(timeout, 1, "join")
  while true do
    local r = pack(raw.join_poll(p, true))
    if r[1] == "done" then return unpack(r, 2, r.n) end
    if r[1] == "cancelled" then return false, r[2] end
    if r[1] == "failed" then error(tostring(p) .. " failed: " .. r[2], 2) end
    if deadline then
      if raw.now() >= deadline then return nil, "timeout" end
      raw.wake_at(deadline)
    end
    local problem = wait("join of ", p)
    if problem then error(problem, 2) end
  end
end

function Process.send(p, ...)
  local sequence, problem = raw.process_send(p, ...)
  if sequence == nil then error(problem, 3) end
  while true do
    local status = raw.process_send_poll(p, sequence)
    if status == "sent" then return end
    if status == "closed" then
      error(text("process_finished", label(LABELS.send_to, p)), 3)
    end
    if send_wait(LABELS.send_to, p, p, sequence, 3) then return end
  end
end

function Process.id(p)
  return raw.process_id(p)
end

-- "running", "waiting" (and what it waits on), "cancelling" (asked to cancel, not
-- ended yet), "returned", "failed" (and the error) or "cancelled" (and the
-- cancellation's message).
function Process.status(p)
  return raw.process_status(p)
end

-- How many time slices `p` started after its cancellation was asked for (0 without
-- one): how soon a cancellation took effect, counted rather than timed.
function Process.cancel_slices(p)
  return raw.cancel_slices(p)
end

-- Asks `p` to stop at its next safe point (process/cancel.rs); answers whether this
-- call asked (false: `p` has ended, or was asked already). A process that cancels
-- itself raises the cancellation here.
function Process.cancel(p, reason)
  if reason ~= nil then reason = tostring(reason) end
  local asked, itself = raw.cancel(p, reason)
  if asked == nil then error(itself, 2) end
  if itself then error(raw.cancel_message(), 2) end
  return asked
end

-- Channels -----------------------------------------------------------------------------

function lutra.channel(capacity)
  if capacity ~= nil and (math.type(capacity) ~= "integer" or capacity < 0) then
    raise("bad argument #1 to 'channel' (non-negative integer expected, got " .. tostring(capacity) .. ")", 1)
  end
  return raw.channel(capacity)
end

-- A channel method called on something else: a bad-argument error at the caller's line
-- (`extra` more levels up: 1 for a method the native fast path calls, see below).
local function check_channel(ch, name, extra)
  if not raw.is_channel(ch) then
    raise("bad argument #1 to '" .. name .. "' (channel expected, got " .. type(ch) .. ")",
      2 + (extra or 0))
  end
end

-- `Channel.send` and `Channel.receive` are the fallbacks of their native fast paths
-- (api/native), which call them (through `shared.lua`'s wrappers, by tail calls) with
-- the method's arguments: their errors are raised one level further up (the native
-- function's caller).
function Channel.send(ch, ...)
  -- true: sent; a number: queued as that sequence, the caller registered to be woken
  -- when it is received; nil and why not (`false` for a `ch` that is no channel).
  local sequence, problem = raw.channel_send(ch, ...)
  if sequence == true then return end
  if sequence == nil then
    if problem == false then check_channel(ch, "send", 1) end
    error(problem, 3)
  end
  while true do
    if send_wait(LABELS.send_on, ch, ch, sequence, 3) then return end
    local status = raw.channel_send_poll(ch, sequence)
    if status == "sent" then return end
    if status == "closed" then
      error(text("closed_before_received", tostring(ch)), 3)
    end
  end
end

-- What one receive attempt on `ch` answered (`status, ...values`): the values, or an
-- error, or (after waiting) the next attempt. Tail calls all the way, so that the
-- error level 2 is the caller of Channel.receive (3: the native receive's caller), and
-- no table holds the values.
local function receive_answer(ch, status, ...)
  if status == "ok" then return ... end
  if status == "closed" then error(text("receive_closed", tostring(ch)), 3) end
  local problem = wait(LABELS.receive_on, ch)
  if problem then error(problem, 3) end
  return receive_answer(ch, raw.channel_poll(ch, nil, true))
end

function Channel.receive(ch)
  check_channel(ch, "receive", 1)
  return receive_answer(ch, raw.channel_poll(ch, nil, true))
end

-- As receive_answer, for a try_receive with a timeout (`deadline`): true and the
-- values, or false and why not ("closed", "timeout").
local function try_answer(ch, deadline, status, ...)
  if status == "ok" then return true, ... end
  if status ~= "wait" then return false, status end
  local problem = wait(LABELS.receive_on, ch)
  if problem then error(problem, 2) end
  return try_answer(ch, deadline, raw.channel_poll(ch, deadline, true))
end

function Channel.try_receive(ch, timeout)
  check_channel(ch, "try_receive")
  if timeout == nil then
    local r = pack(raw.channel_poll(ch, nil, false))
    if r[1] == "ok" then return true, unpack(r, 2, r.n) end
    return false, r[1]
  end
  local deadline = deadline_of(timeout, 1, "try_receive")
  return try_answer(ch, deadline, raw.channel_poll(ch, deadline, true))
end

function Channel.close(ch)
  check_channel(ch, "close")
  raw.channel_close(ch)
end

function Channel.values(ch)
  check_channel(ch, "values")
  return function()
    while true do
      local r = pack(raw.channel_poll(ch, nil, true))
      if r[1] == "ok" then return unpack(r, 2, r.n) end
      if r[1] == "closed" then return nil end
      local problem = wait(LABELS.receive_on, ch)
      if problem then error(problem, 2) end
    end
  end
end

function lutra.select(...)
  local n = select("#", ...)
  local timeout
  if n > 0 and type(select(n, ...)) == "number" then
    timeout = select(n, ...)
    n = n - 1
  end
  if n == 0 then
    raise("bad argument #1 to 'select' (channel expected, got no value)", 1)
  end
  local channels = {}
  for i = 1, n do
    local ch = select(i, ...)
    if not raw.is_channel(ch) then
      raise("bad argument #" .. i .. " to 'select' (channel expected, got " .. type(ch) .. ")", 1)
    end
    channels[i] = ch
  end
  local deadline = deadline_of(timeout, n + 1, "select")
  while true do
    local r = pack(raw.select_poll(channels, deadline, true))
    if r[1] == "ok" then return unpack(r, 2, r.n) end
    if r[1] == "closed" then error("select: every channel is closed", 2) end
    if r[1] == "timeout" then return nil end
    local problem = wait("select over " .. n .. " channels")
    if problem then error(problem, 2) end
  end
end

-- Output -------------------------------------------------------------------------------

-- `os.exit([code [, close]])` in a process ends the whole program with `code` (true or
-- nothing: 0, false: 1, an integer: itself), as under luaproc; Lutra first writes out
-- what was printed and reports the processes that failed unjoined. `close` is ignored:
-- the program ends, every process with it.
if not HOST then
  function os.exit(code)
    if code == nil or code == true then
      code = 0
    elseif code == false then
      code = 1
    elseif math.type(code) ~= "integer" then
      local n = math.tointeger(code)
      if not n then arg_error(1, 1, "exit", "integer or boolean", type(code)) end
      code = n
    end
    raw.exit(code)
  end
end

if not HOST then
  print = function(...)
    raw.write_line(...)
  end
end

-- The body of every process's main coroutine ---------------------------------------

local base_xpcall = xpcall

-- One traceback line as the user should see it: a frame of the runtime's own chunks
-- is shown as the library function the user called (`[C]: in function
-- 'lutra.atomic'`, as a C library's frame would be), or dropped when it is plumbing
-- (wrappers, the process's own xpcall); other lines are kept.
local function user_frame(line)
  local src, what = line:match("^\t([^:]*):%d+: in (.*)$")
  if src and INTERNAL[src] then
    local name = what:match("^function '(.-)'$") or what:match("^method '(.-)'$")
    if name and (name:find("^lutra%.") or name:find("^luaproc%.")) then
      return "\t[C]: in function '" .. name .. "'"
    end
    return nil
  end
  if line:find("^\t%[C%]: in upvalue 'base_x?pcall'$") then return nil end
  return line
end

-- The traceback of `e` with the runtime's frames removed (see `user_frame`), and the
-- frames below the process's main function (the run wrapper) cut off.
local function user_traceback(e, level)
  local out = {}
  for line in (traceback(e, level + 1) .. "\n"):gmatch("(.-)\n") do
    local kept = user_frame(line)
    if kept and kept ~= out[#out] then out[#out + 1] = kept end
  end
  while out[#out] == "\t(...tail calls...)" or out[#out] == "\t[C]: in function 'xpcall'" do
    out[#out] = nil
  end
  return table.concat(out, "\n")
end

local function with_traceback(e)
  if type(e) ~= "string" then e = tostring(e) end
  local text = user_traceback(e, 2) -- not a tail call: this frame is level 1
  return text
end

-- `file:read(...)` of an io.popen pipe with nothing to read yet, in a process that
-- can park (popen/wait.rs): parks until the pipe has input, its end or an error, then
-- reads with `read`, the standard file:read. Where the park cannot reach the
-- scheduler (a coroutine resumed from C), the read blocks as other C calls do.
local function read_pipe(read, file, ...)
  local watch = raw.watch_pipe(file)
  while watch do
    if raw.prepare_park("io.popen pipe") then
      raw.unwatch_pipe(watch)
      break
    end
    local answer = co_yield(PARK)
    raw.unwatch_pipe(watch)
    if answer == CANCEL then raise(raw.cancel_message(), 1) end
    if answer == CANNOT then
      raw.note_wait(nil)
      break
    end
    watch = raw.watch_pipe(file)
  end
  return read(file, ...)
end

-- The results of one step of `pipe_lines`' iterator from what file:read returned:
-- lua5.4's io_readline (the values; nothing at the end; the read's error raised).
local function line_answer(first, ...)
  if first then return first, ... end
  local problem = ...
  if problem ~= nil then error(problem, 0) end
end

-- `file:lines(...)` of an io.popen pipe in a process (popen/wait.rs; the standard
-- file:lines has checked the arguments): lua5.4's iterator, reading with file:read,
-- which parks the process while the pipe has nothing to read.
local io_type = io.type
local function pipe_lines(file, ...)
  local formats = pack(...)
  return function()
    if io_type(file) ~= "file" then error("file is already closed", 0) end
    return line_answer(file:read(unpack(formats, 1, formats.n)))
  end
end

-- Returns true and the results, or false and the error with its traceback.
local function run(main, ...)
  return base_xpcall(main, with_traceback, ...)
end

return {
  lutra = lutra, channel = Channel, process = Process, run = run, read_pipe = read_pipe,
  pipe_lines = pipe_lines,
  -- for luaproc.lua
  internal = { wait = wait, send_wait = send_wait, where = where, raise = raise, cannot = CANNOT },
}
