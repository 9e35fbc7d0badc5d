-- weblog_lib.lua — the parts of examples/weblog.lua that its processes run: each
-- process requires this module into its own state (a function sent to a process may
-- use only globals and its arguments).

local lpeg = require "lpeg"
local cjson = require "cjson"
local socket = require "socket"
local http = require "socket.http"
local ltn12 = require "ltn12"

-- Gives the others a turn while a socket has nothing for us.
local pause = lutra.shim and lutra.yield or function() lutra.sleep(0.0005) end

-- A luasocket TCP object whose calls pause instead of blocking (for socket.http's
-- `create`, and for the server's connections). Loopback connects complete through
-- the listen backlog, so `connect` runs blocking.
local function cooperative(sock)
  local wrapped = {}
  function wrapped:settimeout() return 1 end
  function wrapped:setoption(...) return sock:setoption(...) end
  function wrapped:close() return sock:close() end
  function wrapped:connect(host, port)
    sock:settimeout(nil)
    local ok, err = sock:connect(host, port)
    sock:settimeout(0)
    return ok, err
  end
  function wrapped:send(data, i, j)
    i = i or 1
    while true do
      local sent, err, last = sock:send(data, i, j)
      if sent then return sent end
      if err ~= "timeout" then return nil, err, last end
      i = last + 1
      pause()
    end
  end
  function wrapped:receive(pattern, prefix)
    local got = prefix
    while true do
      local data, err, partial = sock:receive(pattern, got)
      if data then return data end
      if err ~= "timeout" then return nil, err, partial end
      got = partial
      pause()
    end
  end
  sock:settimeout(0)
  return wrapped
end

-- The logs -------------------------------------------------------------------------

-- A deterministic generator (a linear congruential one), so that every run serves
-- the same logs.
local function generator(seed)
  local state = seed
  return function(n)
    state = (state * 1103515245 + 12345) % 2147483648
    return (state // 65536) % n + 1
  end
end

local PATHS = { "/", "/index.html", "/about", "/blog/lutra-0.1", "/blog/stm", "/api/items",
  "/api/items/42", "/static/app.js", "/static/style.css", "/img/logo.png", "/search?q=lua",
  "/search?q=stm&page=2", "/login", "/logout", "/feed.xml", "/robots.txt" }
local STATUSES = { 200, 200, 200, 200, 200, 200, 304, 304, 301, 404, 404, 500, 403 }
local METHODS = { "GET", "GET", "GET", "GET", "POST", "HEAD", "PUT", "DELETE" }
local AGENTS = { "Mozilla/5.0 (X11; Linux x86_64) Firefox/120.0", "curl/8.4.0",
  "Mozilla/5.0 (compatible; Googlebot/2.1)", "Mozilla/5.0 (Macintosh) Safari/605.1",
  "Wget/1.21", "Mozilla/5.0 (compatible; bingbot/2.0)", "python-requests/2.31" }
local MONTHS = { "Jan", "Feb", "Mar", "Apr", "May", "Jun" }

-- Log `index`: `lines` lines of the combined log format.
local function make_log(index, lines_wanted)
  local pick = generator(index * 7919)
  local lines = {}
  for i = 1, lines_wanted do
    lines[i] = string.format('10.%d.%d.%d - - [%02d/%s/2026:%02d:%02d:%02d +0000] "%s %s HTTP/1.1" %d %d "%s" "%s"',
      pick(4) - 1, pick(16) - 1, pick(250), pick(28), MONTHS[pick(#MONTHS)], pick(24) - 1, pick(60) - 1,
      pick(60) - 1, METHODS[pick(#METHODS)], PATHS[pick(#PATHS)], STATUSES[pick(#STATUSES)],
      pick(50000), pick(3) == 1 and "-" or "https://example.org/", AGENTS[pick(#AGENTS)])
  end
  return table.concat(lines, "\n") .. "\n"
end

-- The server: a process answering `GET /log/N` (1 <= N <= files) with log N, until
-- `GET /quit`.
-- Its port goes back on `ready`. One connection at a time.
local function serve(ready, files, lines)
  local listener = assert(socket.bind("127.0.0.1", 0))
  listener:settimeout(0)
  local _, port = listener:getsockname()
  ready:send(port)
  while true do
    local client = listener:accept()
    if not client then
      pause()
    else
      local conn = cooperative(client)
      local request = conn:receive("*l") or ""
      repeat local header = conn:receive("*l") until header == nil or header == ""
      local path = request:match("^GET (%S+)")
      local index = path and tonumber(path:match("^/log/(%d+)$"))
      -- Made on request: while a fetcher parses one log, the next one is made.
      local body, status = index and index >= 1 and index <= files and make_log(index, lines), "200 OK"
      if path == "/quit" then body = "bye\n" elseif not body then body, status = "no such log\n", "404 Not Found" end
      conn:send(("HTTP/1.0 %s\r\nContent-Type: text/plain\r\nContent-Length: %d\r\n\r\n"):format(status, #body))
      conn:send(body)
      conn:close()
      if path == "/quit" then break end
    end
  end
  listener:close()
end

-- Parsing --------------------------------------------------------------------------

local P, R, S, C, Ct, Cg = lpeg.P, lpeg.R, lpeg.S, lpeg.C, lpeg.Ct, lpeg.Cg
local digit, space = R "09", P " "
local function field(name, pattern) return Cg(pattern, name) end
local quoted_text = (1 - P '"') ^ 0
local ip = field("ip", C((digit ^ 1 * "." * digit ^ 1 * "." * digit ^ 1 * "." * digit ^ 1)))
local date = "[" * digit ^ 2 * "/" * field("month", C(R("AZ") * R("az") ^ 2)) * "/" * digit ^ 4
  * ":" * field("hour", C(digit ^ 2) / tonumber) * ":" * digit ^ 2 * ":" * digit ^ 2
  * space * S "+-" * digit ^ 4 * "]"
local request = '"' * field("method", C(R "AZ" ^ 1)) * space
  * field("path", C((1 - S '? "') ^ 1)) * (P "?" * (1 - S ' "') ^ 0) ^ -1
  * space * "HTTP/" * digit * "." * digit * '"'
local number = C(digit ^ 1) / tonumber
-- A bot names itself in its agent string.
local bot = lpeg.P { (P "bot" + "Bot" + "crawler" + "spider") + 1 * lpeg.V(1) }
local agent = '"' * field("bot", C(quoted_text) / function(a) return bot:match(a) ~= nil end) * '"'
local line = Ct(ip * " - - " * date * space * request * space * field("status", number) * space
  * field("bytes", number + P "-" / function() return 0 end) * space * '"' * quoted_text * '"'
  * space * agent)

-- The counts of no line.
local function empty()
  return { lines = 0, bad = 0, bots = 0, bytes = 0, status = {}, methods = {}, hours = {},
    paths = {}, ips = {} }
end

-- Counts of one log's lines.
local function analyse(text)
  local counts = empty()
  local function add(t, k, n) t[k] = (t[k] or 0) + (n or 1) end
  for text_line in text:gmatch("[^\n]+") do
    local entry = line:match(text_line)
    if entry then
      counts.lines = counts.lines + 1
      counts.bytes = counts.bytes + entry.bytes
      add(counts.status, tostring(entry.status))
      add(counts.methods, entry.method)
      add(counts.hours, string.format("%02d", entry.hour))
      local path = counts.paths[entry.path] or { hits = 0, bytes = 0, errors = 0 }
      path.hits, path.bytes = path.hits + 1, path.bytes + entry.bytes
      if entry.status >= 400 then path.errors = path.errors + 1 end
      counts.paths[entry.path] = path
      counts.ips[entry.ip] = true
      if entry.bot then counts.bots = counts.bots + 1 end
    else
      counts.bad = counts.bad + 1
    end
  end
  return counts
end

-- Fetches log `index` from the server on `port` and analyses it.
local function fetch_and_analyse(port, index)
  local body = {}
  local ok, code = http.request {
    url = ("http://127.0.0.1:%d/log/%d"):format(port, index),
    sink = ltn12.sink.table(body),
    create = function() return cooperative(socket.tcp()) end,
  }
  assert(ok and code == 200, "fetching log " .. index .. ": " .. tostring(code))
  return analyse(table.concat(body))
end

-- Merging and output ---------------------------------------------------------------

local function merge(total, part)
  local function add_all(into, from)
    for k, v in pairs(from) do into[k] = (into[k] or 0) + v end
  end
  total.lines, total.bad = total.lines + part.lines, total.bad + part.bad
  total.bots, total.bytes = total.bots + part.bots, total.bytes + part.bytes
  add_all(total.status, part.status)
  add_all(total.methods, part.methods)
  add_all(total.hours, part.hours)
  for path, p in pairs(part.paths) do
    local t = total.paths[path] or { hits = 0, bytes = 0, errors = 0 }
    t.hits, t.bytes, t.errors = t.hits + p.hits, t.bytes + p.bytes, t.errors + p.errors
    total.paths[path] = t
  end
  for ip in pairs(part.ips) do total.ips[ip] = true end
end

-- JSON with object keys sorted (cjson writes each value; the order is ours).
local function canonical(value)
  if type(value) ~= "table" then return cjson.encode(value) end
  if #value > 0 or next(value) == nil then
    local items = {}
    for i, v in ipairs(value) do items[i] = canonical(v) end
    return "[" .. table.concat(items, ",") .. "]"
  end
  local keys = {}
  for k in pairs(value) do keys[#keys + 1] = k end
  table.sort(keys)
  local items = {}
  for i, k in ipairs(keys) do items[i] = cjson.encode(k) .. ":" .. canonical(value[k]) end
  return "{" .. table.concat(items, ",") .. "}"
end

local function report(total, files)
  local top = {}
  for path, p in pairs(total.paths) do
    top[#top + 1] = { path = path, hits = p.hits, bytes = p.bytes, errors = p.errors }
  end
  table.sort(top, function(a, b) return a.hits > b.hits or (a.hits == b.hits and a.path < b.path) end)
  local unique = 0
  for _ in pairs(total.ips) do unique = unique + 1 end
  return {
    logs = files, lines = total.lines, unparsed = total.bad, bytes = total.bytes,
    bot_requests = total.bots, unique_clients = unique, status = total.status,
    methods = total.methods, requests_per_hour = total.hours,
    top_paths = { table.unpack(top, 1, math.min(10, #top)) },
  }
end

return {
  serve = serve, fetch_and_analyse = fetch_and_analyse, cooperative = cooperative,
  empty = empty, merge = merge, canonical = canonical, report = report,
}
