-- A script may start with a UTF-8 byte-order mark, as under lua5.4: lines are
-- counted from the first byte after it.
assert(debug.getinfo(1, "l").currentline == 3)
assert(("é"):len() == 2)
