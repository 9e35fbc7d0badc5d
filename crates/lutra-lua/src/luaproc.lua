-- luaproc's API over Lutra's runtime (seed 001), so that luaproc programs run
-- unchanged: named rendezvous channels in a registry, `send` that returns once the
-- message is received, `receive` with luaproc's asynchronous flag, processes created
-- from source strings or functions (upvalues copied as luaproc copies them), and the
-- worker count, `wait` and `recycle`. Expected failures return `nil, message` with
-- luaproc's wording; misuse raises as `luaL_argerror` does.
--
-- Loaded by `package.preload.luaproc` with the raw functions and the prelude's
-- internal helpers (`wait`: park the caller; `send_wait`: the same in a send, which
-- takes its message back when the wait fails; `where`: the caller's file:line).

local raw, internal = ...
local wait, send_wait, where = internal.wait, internal.send_wait, internal.where
local pack, unpack, select, type, error, tostring = table.pack, table.unpack, select, type, error, tostring
local load, getupvalue, dump = load, debug.getupvalue, string.dump
local math_type = math.type
-- The first words of the labels of the waits below; the error texts are `raw.text`'s
-- (both written once, in Rust: api/texts.rs).
local LABELS = raw.wait_labels

local luaproc = {}


local copyable = { boolean = true, number = true, string = true, ["nil"] = true }

-- luaproc copies a function's upvalues when they are booleans, numbers, strings, nil
-- or the global table; anything else is refused.
local function upvalues_of(f)
  local upvalues = { n = 0, env = {}, values = {} }
  local i = 1
  while true do
    local name, value = getupvalue(f, i)
    if name == nil then break end
    if value == _G or name == "_ENV" and type(value) == "table" then
      upvalues.env[i] = true
    elseif copyable[type(value)] then
      upvalues.values[i] = value
    else
      return nil, "failed to copy upvalue of unsupported type '" .. type(value) .. "'"
    end
    upvalues.n = i
    i = i + 1
  end
  return upvalues
end

-- `extra`: more levels up (1 for `send` and `receive`, which their native fast paths
-- call, see below).
local function check_name(name, position, fname, extra)
  if type(name) ~= "string" and type(name) ~= "number" then
    error("bad argument #" .. position .. " to '" .. fname .. "' (string expected, got "
      .. (name == nil and "no value" or type(name)) .. ")", 3 + (extra or 0))
  end
  return tostring(name)
end

-- The named-channel cache of the native fast paths: every lookup here fills it.
local named = raw.lp_named

-- The channel called `name`: its handle, or nil and why not.
local function lookup(name)
  local ch, problem = raw.lp_channel(name)
  if ch then named[name] = ch end
  return ch, problem
end

function luaproc.newproc(code)
  local kind, upvalues, name = type(code), nil, nil
  if kind == "function" then
    local problem
    upvalues, problem = upvalues_of(code)
    if not upvalues then return nil, problem end
    code, name = dump(code), "=" .. where(2)
  elseif kind == "string" then
    local ok, problem = load(code, code, "t")
    if not ok then return nil, problem end
    name = code
  else
    return nil, "cannot use '" .. kind .. "' to create a new process"
  end
  -- The child runs luaproc_boot.lua (compiled once per OS process): the global
  -- `luaproc`, as luaproc registers it in every new state, then the code.
  local p, problem = raw.lp_spawn(where(2), kind, code, name, upvalues)
  if not p then return nil, problem end
  return true
end

function luaproc.newchannel(name)
  return raw.lp_newchannel(check_name(name, 1, "newchannel"))
end

function luaproc.delchannel(name)
  return raw.lp_delchannel(check_name(name, 1, "delchannel"))
end

-- Waits until the message `sequence` on `ch` (named `name`) has been received: true,
-- or nil and why not. `send` and `receive` below are the fallbacks of their native
-- fast paths (api/native), which call them: errors are raised one level further up.
local function delivered(ch, name, sequence)
  if sequence == true then return true end -- taken at once
  while true do
    -- raw.channel_send registered the caller: it is woken once the message is taken.
    if send_wait(LABELS.luaproc_send, name, ch, sequence, 4) then return true end
    local status = raw.channel_send_poll(ch, sequence)
    if status == "sent" then return true end
    if status == "closed" then
      return nil, raw.text("luaproc_send_destroyed", name)
    end
  end
end

function luaproc.send(name, ...)
  name = check_name(name, 1, "send", 1)
  local ch, problem = lookup(name)
  if not ch then return nil, problem end
  local sequence
  sequence, problem = raw.channel_send(ch, ...)
  if sequence then return delivered(ch, name, sequence) end
  if raw.channel_closed(ch) then return nil, raw.text("luaproc_no_channel", name) end
  -- A value that cannot be sent: as luaproc does, the receiver this send meets gets
  -- nil and the reason instead of the message, and the sender gets them too.
  sequence = raw.channel_send(ch, nil, problem)
  if sequence then
    local ok, why = delivered(ch, name, sequence)
    if not ok then return nil, why end
  end
  return nil, problem
end

-- What one blocking receive attempt on `ch` (named `name`) answered (`status,
-- ...values`): the values, nil and why not, or (after waiting) the next attempt; tail
-- calls, so that error level 2 is the caller of luaproc.receive (3: the caller of the
-- native receive).
local function received(ch, name, status, ...)
  if status == "ok" then return ... end
  if status == "closed" then
    return nil, raw.text("luaproc_receive_destroyed", name)
  end
  local problem = wait(LABELS.luaproc_receive, name)
  if problem then error(problem, 3) end
  return received(ch, name, raw.channel_poll(ch, nil, true))
end

function luaproc.receive(name, async)
  name = check_name(name, 1, "receive", 1)
  local ch, problem = lookup(name)
  if not ch then return nil, problem end
  if async then
    local r = pack(raw.channel_poll(ch, nil, false))
    if r[1] == "ok" then return unpack(r, 2, r.n) end
    if r[1] == "closed" then return nil, raw.text("luaproc_no_channel", name) end
    return nil, "no senders waiting on channel '" .. name .. "'"
  end
  return received(ch, name, raw.channel_poll(ch, nil, true))
end

local function check_count(n, fname, what)
  if math_type(n) == nil then
    error("bad argument #1 to '" .. fname .. "' (number expected, got "
      .. (n == nil and "no value" or type(n)) .. ")", 3)
  end
  if math_type(n) == "float" then
    if n ~= math.floor(n) then
      error("bad argument #1 to '" .. fname .. "' (number has no integer representation)", 3)
    end
    n = math.tointeger(n)
  end
  return n
end

function luaproc.setnumworkers(n)
  n = check_count(n, "setnumworkers")
  if n <= 0 then error("bad argument #1 to 'setnumworkers' (number of workers must be positive)", 2) end
  if n > raw.max_workers then
    error("bad argument #1 to 'setnumworkers' (at most " .. raw.max_workers .. " workers)", 2)
  end
  raw.set_workers(n)
end

function luaproc.getnumworkers()
  return raw.workers()
end

function luaproc.wait()
  while not raw.wait_poll() do
    local problem = wait("the other processes to finish (luaproc.wait)")
    if problem then error(problem, 2) end
  end
end

function luaproc.recycle(n)
  n = check_count(n, "recycle")
  if n < 0 then error("bad argument #1 to 'recycle' (recycle limit must be positive)", 2) end
  raw.set_recycle(n)
  return true
end

luaproc.send = raw.lp_native("send", luaproc.send)
luaproc.receive = raw.lp_native("receive", luaproc.receive)

return luaproc
