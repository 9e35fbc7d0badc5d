-- The Lua side of freeze and move: wrappers that raise plain string errors, and the
-- metamethods that raise on a frozen table's assignment and on any use of a moved
-- table. Loaded once per state by api/transfer.rs with (raw, lutra, internal), where
-- `internal` is the prelude's (`raise`: an error at the user's line).

local raw, lutra, internal = ...
local error, tostring, raise = error, tostring, internal.raise

-- Raises `problem` (a string) at the user's line that called the API function (the
-- caller of `checked`) when `value` is nil.
local function checked(value, problem)
  if value == nil and problem ~= nil then raise(problem, 2) end
  return value
end

function lutra.freeze(value)
  return checked(raw.freeze(value))
end

function lutra.is_frozen(value)
  return raw.is_frozen(value)
end

function lutra.move(t)
  if type(t) ~= "table" then
    raise("bad argument #1 to 'move' (table expected, got " .. type(t) .. ")", 1)
  end
  return checked(raw.move(t))
end

function lutra.is_moved(t)
  return raw.is_moved(t)
end

local MOVED = "this table was moved to another process (lutra.move)"
local function moved() error(MOVED, 2) end

local moved_metatable = {
  __index = moved, __newindex = moved, __len = moved, __pairs = moved,
  __call = moved, __concat = moved, __close = moved,
  __unm = moved, __add = moved, __sub = moved, __mul = moved, __div = moved,
  __lt = moved, __le = moved,
  __name = "moved table",
  __metatable = MOVED,
}

local function frozen_newindex(_, key)
  error("cannot assign to a frozen table (lutra.freeze made it immutable): key "
    .. tostring(key), 2)
end

return { moved_metatable = moved_metatable, frozen_newindex = frozen_newindex }
