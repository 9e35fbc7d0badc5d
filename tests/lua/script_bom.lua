-- A script may start with a UTF-8 byte-order mark, as under lua5.4 (issue 11,
-- item 9).
assert(debug.getinfo(1, "l").currentline == 3)
assert(("é"):len() == 2)
