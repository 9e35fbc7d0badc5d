-- shim.lua — a one-core stand-in for the part of the `lutra` API the benchmark
-- scripts use, so that the same script runs under stock `lua5.4` (the baseline):
-- processes are coroutines run in turn by a tiny scheduler in this file.
--
-- Loaded by a script only when the global `lutra` is absent:
--   if not lutra then dofile((arg and arg[0] or ""):match("^(.-)[^/]*$") .. "shim.lua") end
--
-- Supported: lutra.spawn(fn, ...), p:join(), p:send(...), lutra.receive(),
-- lutra.self(), lutra.yield(), lutra.channel([cap]) with ch:send / receive / close /
-- values, lutra.select(ch, ...) (no timeout). Not supported: timeouts, sleep,
-- shared tables. `lutra.shim` is true.
--
-- # Protocol
-- 1. `spawn` wraps the function in a coroutine and queues it (FIFO ready queue).
-- 2. A blocking call inside a process registers the process on the object's wait
--    list (with a fresh token) and yields BLOCK; the scheduler does not queue it
--    again until something wakes it. A waker skips list entries whose token is stale
--    (the process was woken by another object meanwhile, as in select).
-- 3. A blocking call in the main chunk (not a coroutine) runs queued processes one
--    at a time until its condition holds; nothing left to run means deadlock.
-- Every woken process re-checks its condition, so spurious wake-ups are harmless.

local BLOCK = setmetatable({}, { __name = "shim.block" })
local pack, unpack = table.pack, table.unpack
local co_create, co_resume, co_yield, co_status = coroutine.create, coroutine.resume, coroutine.yield, coroutine.status

local ready, head, tail = {}, 1, 0
local failures = {} -- errors of processes nobody joined yet, for the deadlock report
local current = nil -- the running process, nil in the main chunk

local Process = {}
Process.__index = Process
local Channel = {}
Channel.__index = Channel

local MAIN = setmetatable({ mail = {}, mail_head = 1, mail_tail = 0 }, Process)

local function enqueue(p)
  tail = tail + 1
  ready[tail] = p
end

local function wake_entry(entry)
  local p = entry.p
  if p.token == entry.token then
    p.token = nil
    enqueue(p)
    return true
  end
  return false
end

-- Wakes the first process still waiting on `list`.
local function wake_one(list)
  while list.head <= list.tail do
    local entry = list[list.head]
    list[list.head] = nil
    list.head = list.head + 1
    if wake_entry(entry) then return end
  end
end

local function wake_all(list)
  while list.head <= list.tail do
    local entry = list[list.head]
    list[list.head] = nil
    list.head = list.head + 1
    wake_entry(entry)
  end
end

local function new_list() return { head = 1, tail = 0 } end

local function register(list, p, token)
  list.tail = list.tail + 1
  list[list.tail] = { p = p, token = token }
end

-- Runs one queued process for one step; false when none is queued.
local function run_one()
  if head > tail then return false end
  local p = ready[head]
  ready[head] = nil
  head = head + 1
  local previous = current
  current = p
  local r
  if p.args then
    local args = p.args
    p.args = nil
    r = pack(co_resume(p.co, unpack(args, 1, args.n)))
  else
    r = pack(co_resume(p.co))
  end
  current = previous
  if not r[1] then
    p.done, p.failed = true, debug.traceback(p.co, tostring(r[2]))
    failures[#failures + 1] = p.failed
    wake_all(p.waiters)
  elseif co_status(p.co) == "dead" then
    p.done, p.results = true, pack(unpack(r, 2, r.n))
    wake_all(p.waiters)
  elseif r[2] ~= BLOCK then
    enqueue(p) -- a plain yield: stays runnable
  end
  return true
end

-- Waits until `ready_now()` holds, registering on each list of `lists` meanwhile.
local function block(ready_now, lists)
  while not ready_now() do
    if current then
      local token = {}
      current.token = token
      for i = 1, #lists do register(lists[i], current, token) end
      co_yield(BLOCK)
    elseif not run_one() then
      error("deadlock: the main chunk waits and no process can run\n" .. table.concat(failures, "\n"), 3)
    end
  end
end

-- Processes ------------------------------------------------------------------

local lutra = { shim = true }

function lutra.spawn(fn, ...)
  if type(fn) == "string" then fn = assert(load(fn)) end
  local p = setmetatable({
    co = co_create(fn), args = pack(...), waiters = new_list(),
    mail = {}, mail_head = 1, mail_tail = 0, mail_waiters = new_list(),
  }, Process)
  enqueue(p)
  return p
end

function lutra.self() return current or MAIN end

function lutra.yield()
  if current then co_yield() else run_one() end
end

function Process:join()
  block(function() return self.done end, { self.waiters })
  if self.failed then error(tostring(self) .. " failed: " .. self.failed, 2) end
  return unpack(self.results, 1, self.results.n)
end

function Process:send(...)
  if self.done then error("cannot send to a finished process", 2) end
  self.mail_tail = self.mail_tail + 1
  self.mail[self.mail_tail] = pack(...)
  if self.mail_waiters then wake_one(self.mail_waiters) end
end

function lutra.receive()
  local me = current or MAIN
  me.mail_waiters = me.mail_waiters or new_list()
  block(function() return me.mail[me.mail_head] ~= nil end, { me.mail_waiters })
  local m = me.mail[me.mail_head]
  me.mail[me.mail_head] = nil
  me.mail_head = me.mail_head + 1
  return unpack(m, 1, m.n)
end

-- Channels -------------------------------------------------------------------

function lutra.channel(capacity)
  return setmetatable({
    cap = capacity or 0, q = {}, qh = 1, qt = 0, closed = false,
    receivers = new_list(), senders = new_list(),
  }, Channel)
end

function Channel:send(...)
  if self.closed then error("send on a closed channel", 2) end
  local item = pack(...)
  self.qt = self.qt + 1
  self.q[self.qt] = item
  wake_one(self.receivers)
  if self.cap == 0 then
    item.waiters = new_list() -- a rendezvous: the receiver of this item wakes us
    block(function() return item.taken or self.closed end, { item.waiters })
    if not item.taken then error("send on a channel closed before the message was received", 2) end
  else
    block(function() return self.qt - self.qh + 1 <= self.cap or self.closed end, { self.senders })
  end
end

local function take(ch)
  local item = ch.q[ch.qh]
  ch.q[ch.qh] = nil
  ch.qh = ch.qh + 1
  item.taken = true
  if item.waiters then wake_all(item.waiters) else wake_one(ch.senders) end
  return unpack(item, 1, item.n)
end

function Channel:receive()
  block(function() return self.qh <= self.qt or self.closed end, { self.receivers })
  if self.qh > self.qt then error("receive on a closed channel", 2) end
  return take(self)
end

function Channel:close()
  if self.closed then return end
  self.closed = true
  wake_all(self.receivers)
  wake_all(self.senders)
  for i = self.qh, self.qt do
    if self.q[i].waiters then wake_all(self.q[i].waiters) end
  end
end

function Channel:values()
  return function()
    block(function() return self.qh <= self.qt or self.closed end, { self.receivers })
    if self.qh > self.qt then return nil end
    return take(self)
  end
end

function lutra.select(...)
  local channels = { ... }
  local function pick()
    local open = false
    for _, ch in ipairs(channels) do
      if ch.qh <= ch.qt then return ch end
      if not ch.closed then open = true end
    end
    if not open then return "closed" end
  end
  local lists = {}
  for i, ch in ipairs(channels) do lists[i] = ch.receivers end
  block(function() return pick() ~= nil end, lists)
  local ch = pick()
  if ch == "closed" then error("select: every channel is closed", 2) end
  return ch, take(ch)
end

_G.lutra = lutra
return lutra
