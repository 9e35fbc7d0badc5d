-- The main process of the `lutra` program: what lua5.4's `lua.c` does once it has
-- read its command line, in a process (so that `lutra.spawn`, channels and `atomic`
-- work in every part of it). Its chunk is named `=lutra`: the runtime leaves its
-- frames out of tracebacks, as lua.c's C frames are.
--
-- Arguments (strings, from src/driver.rs): the number of command-line arguments N,
-- the script's place among them (0: none), the N arguments (the program's name
-- first), then the steps, three strings each: a kind and two operands.
--   init  chunkname code    LUA_INIT_5_4 / LUA_INIT (`@file` runs the file)
--   e     stat      -       -e stat
--   l     spec      -       -l mod / -l g=mod
--   W     -         -       -W
--   print text      -       print a line (the version)
--   file  path      -       run a script file with the script's arguments
--   stdin -         -       run standard input with the script's arguments
--   dofile -        -       run standard input; its errors leave the exit status 0
--   repl  -         -       the interactive prompt
--
-- Errors: a chunk that cannot be loaded (cannot be opened, read, or parsed) is
-- reported as lua5.4 reports it, without a traceback, and the program exits 1 at
-- once; an error raised by running code ends the main process as any uncaught error
-- does (reported with its traceback; exit status 1). At the prompt, errors are
-- printed and the prompt goes on.
local params = table.pack(...)
local argc, script_at = tonumber(params[1]), tonumber(params[2])

-- `arg` as lua.c lays it out: the script at 0, its arguments from 1, everything
-- before it (the program's name, options) at negative indices.
local args = {}
for i = 0, argc - 1 do
  args[i - script_at] = params[3 + i]
end
arg = args
local script_args = {}
if script_at > 0 then
  for i = 1, argc - 1 - script_at do
    script_args[i] = args[i]
  end
end

local io_open, io_stderr, io_stdin, io_stdout = io.open, io.stderr, io.stdin, io.stdout
local load, select, unpack, exit = load, select, table.unpack, os.exit
local traceback = debug.traceback

-- lua.c's l_message: `lutra: msg` on standard error.
local function message(text)
  io_stderr:write("lutra: ", text, "\n")
  io_stderr:flush()
end

-- A chunk that cannot be loaded ends the program, as under lua5.4.
local function load_failed(text)
  message(text)
  exit(1)
end

-- Bytes read at a time. The parser takes them as it goes (lua_load with a reader):
-- a file that is not Lua text fails at its first bad token, after one block, and a
-- file without end (/dev/zero) is never read whole.
local BLOCK = 8192

-- Loads the file `path` (standard input when nil) as luaL_loadfile does: a UTF-8
-- byte-order mark is skipped, and a first line starting with `#` is emptied (its
-- newline kept, so that line numbers are the file's). Text chunks only.
local function load_file(path)
  local file, chunkname = io_stdin, "=stdin"
  if path then
    local opened, err = io_open(path, "rb")
    if not opened then
      return nil, "cannot open " .. err
    end
    file, chunkname = opened, "@" .. path
  end
  local first, read_error = true, nil
  local function read()
    local block, err = file:read(BLOCK)
    if block == nil and err then
      read_error = err
    end
    return block
  end
  local function reader()
    if not first then
      return read()
    end
    first = false
    local block = read()
    if block and block:sub(1, 3) == "\239\187\191" then
      block = block:sub(4)
      if block == "" then block = read() end
    end
    if block and block:sub(1, 1) == "#" then
      local newline = block:find("\n", 1, true)
      while not newline do
        block = read()
        if not block then return nil end
        newline = block:find("\n", 1, true)
      end
      block = block:sub(newline)
    end
    return block
  end
  local chunk, err = load(reader, chunkname, "t")
  if path then file:close() end
  if read_error then
    return nil, "cannot read " .. (path or "stdin") .. ": " .. read_error
  end
  return chunk, err
end

-- Calls `f` as a tail call, so that a traceback names it as what it is (`main
-- chunk`), not by the driver's local that held it.
local function call(f, ...)
  return f(...)
end

-- lua.c's dochunk for a string: loads or ends the program, then runs.
local function run_string(code, chunkname)
  local chunk, err = load(code, chunkname, "t")
  if not chunk then load_failed(err) end
  call(chunk)
end

local function run_file(path)
  local chunk, err = load_file(path)
  if not chunk then load_failed(err) end
  return chunk
end

-- `-l mod` puts require("mod") in the global `mod`; `-l g=mod` in the global `g`.
local function library(spec)
  local global, name = spec:match("^([^=]*)=(.*)$")
  if not global then
    global, name = spec, spec
  end
  -- Called from C (pcall), as lua.c calls it: its errors carry no position.
  local ok, module = pcall(require, name)
  if not ok then error(module, 0) end
  _G[global] = module
end

-- `warn` as lua.c's state has it (`lua_setwarnf` of lauxlib): off until `@on`
-- (`-W`), `@off` turns it off again, the pieces of a message are written as one line
-- `Lua warning: ...` on standard error.
local warnings_on = false
function warn(first, ...)
  local pieces = table.pack(first, ...)
  for i = 1, math.max(pieces.n, 1) do
    if type(pieces[i]) ~= "string" then
      error(("bad argument #%d to 'warn' (string expected, got %s)"):format(
        i, pieces[i] == nil and i > pieces.n and "no value" or type(pieces[i])), 2)
    end
  end
  if pieces.n == 1 and first:sub(1, 1) == "@" then
    if first == "@on" then warnings_on = true elseif first == "@off" then warnings_on = false end
    return
  end
  if warnings_on then
    io_stderr:write("Lua warning: ", table.concat(pieces, "", 1, pieces.n), "\n")
    io_stderr:flush()
  end
end

-- The interactive prompt ----------------------------------------------------------

local function prompt(first)
  local custom = rawget(_G, first and "_PROMPT" or "_PROMPT2")
  io_stdout:write(custom ~= nil and tostring(custom) or (first and "> " or ">> "))
  io_stdout:flush()
end

-- A syntax error at the end of the input: the statement goes on on the next line.
local function incomplete(err)
  return err:sub(-5) == "<eof>"
end

-- The next statement: `return line` if the first line is an expression, else as
-- many lines as it takes to complete it. Answers the chunk, or nil and the error
-- message (and true if the input ended), or nothing at the end of input.
local function read_statement()
  prompt(true)
  local line = io_stdin:read("l")
  if line == nil then return end
  if line:sub(1, 1) == "=" then
    line = "return " .. line:sub(2)
  end
  local chunk = load("return " .. line .. ";", "=stdin", "t")
  if chunk then return chunk end
  while true do
    local err
    chunk, err = load(line, "=stdin", "t")
    if chunk or not incomplete(err) then return chunk, err end
    prompt(false)
    local more = io_stdin:read("l")
    -- The input ended inside a statement: its error, then the end (a terminal's
    -- end of input is not sticky; reading again would wait for more).
    if more == nil then return nil, err, true end
    line = line .. "\n" .. more
  end
end

-- The traceback of an error at the prompt, without this driver's frames.
-- As lua.c's msghandler: an object with `__tostring` is shown by it alone; any
-- other non-string gets a description; both strings get the traceback.
local function handler(err)
  if type(err) ~= "string" then
    local meta = getmetatable(err)
    if meta and meta.__tostring then
      return tostring(err)
    end
    err = "(error object is a " .. type(err) .. " value)"
  end
  -- The frames below the statement (the prompt's xpcall and this driver) are cut.
  local kept = {}
  for line in (traceback(err, 2) .. "\n"):gmatch("(.-)\n") do
    if line:find("^\tlutra[.:]") or line:find("xpcall'$") then break end
    kept[#kept + 1] = line
  end
  kept[#kept + 1] = "\t[C]: in ?"
  return table.concat(kept, "\n")
end

local function show(ok, ...)
  if not ok then
    io_stderr:write((...), "\n")
    io_stderr:flush()
  elseif select("#", ...) > 0 then
    local shown, err = pcall(print, ...)
    if not shown then
      io_stderr:write("error calling 'print' (", tostring(err), ")\n")
    end
  end
end

local function repl()
  while true do
    local chunk, err, ended = read_statement()
    if chunk then
      show(xpcall(chunk, handler))
    elseif err then
      io_stderr:write(err, "\n")
      io_stderr:flush()
    end
    if not chunk and (ended or not err) then break end
  end
  io_stdout:write("\n")
  io_stdout:flush()
end

-- The steps -------------------------------------------------------------------------

local steps = {}
for i = 3 + argc, params.n, 3 do
  steps[#steps + 1] = { params[i], params[i + 1], params[i + 2] }
end

-- The script, when it is the last step: called after the loop (a generic `for`
-- holds a to-be-closed value, so a call inside it is never a tail call), so that
-- its frames are the bottom of its tracebacks.
local script
for index, step in ipairs(steps) do
  local kind, a, b = step[1], step[2], step[3]
  local last = index == #steps
  if kind == "init" then
    if b:sub(1, 1) == "@" then
      call(run_file(b:sub(2)))
    else
      run_string(b, a)
    end
  elseif kind == "e" then
    run_string(a, "=(command line)")
  elseif kind == "l" then
    library(a)
  elseif kind == "W" then
    warn("@on")
  elseif kind == "print" then
    io_stdout:write(a, "\n")
    io_stdout:flush()
  elseif kind == "file" or kind == "stdin" then
    local chunk = run_file(kind == "file" and a or nil)
    if last then
      script = chunk
      break
    end
    call(chunk, unpack(script_args))
  elseif kind == "dofile" then
    -- No script, standard input not a terminal: lua.c runs standard input and
    -- reports its error, but the program's exit status stays 0.
    local chunk, err = load_file(nil)
    if chunk then
      local ok, failure = xpcall(chunk, handler, unpack(script_args))
      if not ok then message(failure) end
    else
      message(err)
    end
  elseif kind == "repl" then
    repl()
  end
end
if script then
  return script(unpack(script_args))
end
