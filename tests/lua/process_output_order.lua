-- Output written with io.write and print comes out in program order (print used to
-- overtake what io.write had buffered).
-- expect-stdout: a b
-- expect-stdout: c d
io.write("a ")
print("b")
io.write("c ")
print("d")
