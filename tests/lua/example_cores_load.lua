-- expect-stdout: results match: yes
-- expect-stdout: machine:
-- The demo (examples/cores.lua, what `make demo` runs) ends by saying whether other
-- programs kept the machine busy during its run ("machine: quiet (...)" or
-- "machine: BUSY: ..."), measured as the benchmark suite measures it, so that a low
-- speedup on a shared machine is not read as Lutra's.
loadfile("../../examples/cores.lua")("2", "20000")
