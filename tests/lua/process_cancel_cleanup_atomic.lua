-- lutra-args: -w 2
-- A cancelled process's cleanup can record its end in a shared table: a
-- transaction in a __close handler, or after a pcall that caught the cancellation,
-- commits (the cancellation was raised already; only a wait raises it again).
local s = lutra.shared { active = 2, log = 0 }
local report = lutra.channel(4)
local forever = lutra.channel()

local function worker(report, s, forever)
  local _ <close> = setmetatable({}, { __close = function()
    lutra.atomic(function() s.active = s.active - 1 end)
  end })
  local ok, err = pcall(function()
    report:send("ready")
    forever:receive()
  end)
  lutra.atomic(function() s.log = s.log + 1 end)
  error(err, 0)
end

local a = lutra.spawn(worker, report, s, forever)
local b = lutra.spawn(worker, report, s, forever)
assert(report:receive() == "ready" and report:receive() == "ready")
for _, p in ipairs { a, b } do
  while p:status() ~= "waiting" do lutra.yield() end
  assert(p:cancel("done") == true)
  local ok, err = p:join()
  assert(ok == false and err == "cancelled: done", tostring(err))
end
assert(s.active == 0, "a __close handler's transaction was refused: active = " .. s.active)
assert(s.log == 2, "a transaction after the caught cancellation was refused: log = " .. s.log)
print("ok")
