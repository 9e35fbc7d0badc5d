-- `print` output from processes is never mixed within a line: a sub-run of `lutra`
-- has many processes print long lines at once, and every line must come out whole.
-- /proc/$PPID/exe: the shell that popen starts is a child of this lutra.
local exe = io.popen("readlink /proc/$PPID/exe"):read("l")
assert(exe and exe ~= "", "cannot find the lutra program")
local script = os.tmpname()
local file = assert(io.open(script, "w"))
file:write([[
local ps = {}
for p = 1, 16 do
  ps[p] = lutra.spawn(function(p)
    local body = string.rep(string.char(64 + p), 3000)
    for i = 1, 50 do print(p, i, body, "end") end
  end, p)
end
for _, p in ipairs(ps) do p:join() end
]])
file:close()
local out = io.popen(exe .. " -w 2 " .. script)
local lines = 0
for line in out:lines() do
  lines = lines + 1
  local p, i, body, tail = line:match("^(%d+)\t(%d+)\t(%u+)\t(%a+)$")
  assert(p, "a mixed line: " .. line:sub(1, 80))
  assert(#body == 3000 and body == string.rep(string.char(64 + tonumber(p)), 3000), "a mixed line body")
  assert(tail == "end")
end
out:close()
os.remove(script)
assert(lines == 16 * 50, "every line came out: " .. lines)
print("process_print_lines ok")
