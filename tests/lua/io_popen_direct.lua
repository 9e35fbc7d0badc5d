-- io.popen of a simple command (words of plain characters, its first word not a shell
-- builtin: started without the shell, crates/lutra-lua/src/popen/direct.rs) answers
-- as the same command through the shell, which a trailing ";" makes take it: the same
-- output and environment, the same results from close, the shell's own errors for a
-- command that cannot start, and no pipe held open by another command's child.
-- Self-contained (no upvalues), so that a process can be given it too.
local function check_everything()
  local function run(command)
    local pipe = assert(io.popen(command))
    local text = pipe:read("a")
    return text, table.pack(pipe:close())
  end

  local function same_results(a, b)
    return a.n == b.n and a[1] == b[1] and a[2] == b[2] and a[3] == b[3]
  end

  local function sorted_lines(text)
    local lines = {}
    for line in text:gmatch("[^\n]+") do lines[#lines + 1] = line end
    table.sort(lines)
    return table.concat(lines, "\n")
  end

  -- The environment the command sees, and its output.
  local direct, direct_end = run("env")
  local shell, shell_end = run("env;")
  assert(sorted_lines(direct) == sorted_lines(shell), "env differs:\n" .. direct .. "\n--\n" .. shell)
  assert(same_results(direct_end, shell_end) and direct_end[1] == true)

  -- A command that fails: the same status.
  local _, failed = run("ls /lutra-no-such-directory")
  local _, failed_shell = run("ls /lutra-no-such-directory;")
  assert(same_results(failed, failed_shell), tostring(failed[3]) .. " vs " .. tostring(failed_shell[3]))
  assert(failed[1] == nil and failed[2] == "exit" and failed[3] == 2)

  -- A command that is not found, or cannot be started: the shell's answer.
  local text, missing = run("lutra-no-such-command")
  assert(text == "" and missing[1] == nil and missing[2] == "exit" and missing[3] == 127)
  local path = os.tmpname()
  local script = assert(io.open(path, "w"))
  script:write("echo from-a-script-with-no-first-line\n")
  script:close()
  local _, refused = run(path)
  assert(refused[1] == nil and refused[2] == "exit" and refused[3] == 126, "not executable: " .. tostring(refused[3]))
  assert(os.execute("chmod +x " .. path))
  assert(run(path) == "from-a-script-with-no-first-line\n", "a script with no #! line runs through the shell")
  os.remove(path)

  -- Write mode, and two writers open at once: each command's input ends when its
  -- own pipe is closed (a second command holding the first one's pipe would keep it
  -- waiting, and this close with it).
  local one, two = os.tmpname(), os.tmpname()
  for _, second_through_shell in ipairs({ false, true }) do
    local first = assert(io.popen("dd of=" .. one .. " status=none", "w"))
    local second = assert(io.popen("dd of=" .. two .. " status=none" .. (second_through_shell and ";" or ""), "w"))
    first:write("to-the-first")
    assert(first:close())
    second:write("to-the-second")
    assert(second:close())
    for file, expected in pairs({ [one] = "to-the-first", [two] = "to-the-second" }) do
      local written = assert(io.open(file))
      assert(written:read("a") == expected)
      written:close()
    end
  end
  os.remove(one)
  os.remove(two)
end

check_everything()
assert(lutra.spawn(function(check) check() return true end, check_everything):join())
print("io_popen_direct: ok")
