# Lutra's entry points. `make demo` runs the main job, `make test` runs every test.
CARGO ?= cargo

.PHONY: demo demo-stm test deps test-rust test-model test-c test-itm test-module test-rock bench bench-quick bench-charts bench-build lint

# Lua processes on every core: CPU-bound processes, elapsed time against the same work
# in one process, and the speedup.
demo:
	$(CARGO) run --release -p lutra-cli --bin lutra -- examples/cores.lua

# The engine alone: a bank under 1–64 threads, throughput and aborts.
demo-stm:
	$(CARGO) run --release -p lutra-bench --bin demo

# `deps` first: what the tests need is checked (and installed, as root) before
# minutes of tests run.
test: deps
	$(MAKE) test-rust test-model test-c test-itm test-module test-rock

# Installs (as root, with apt-get) or names what the tests need besides Rust.
deps:
	scripts/install-deps.sh

test-rust:
	$(CARGO) test --workspace

# Model checks of the engine's protocols on shuttle's scheduler and, under weak memory,
# on loom (crates/lutra-stm/tests/loom.rs: optimised, about 10 s once built, at 3
# preemptions; LOOM_MAX_PREEMPTIONS=4 explores more in about three times as long), of
# the deadlock detector's wake-up protocol (crates/lutra-lua/src/liveness.rs), of
# channels' one wake per message (crates/lutra-lua/src/channel/core.rs) and of the run
# queues' sleep/wake protocols (crates/lutra-sched/src/queue/idle.rs; the tm queue's
# private buffers, crates/lutra-sched/src/queue/transactional.rs).
test-model:
	$(CARGO) test -p lutra-stm --features shuttle --test model
	$(CARGO) test -p lutra-stm --features shuttle --lib epoch::model
	$(CARGO) test --release -p lutra-stm --features loom --test loom
	$(CARGO) test --release -p lutra-stm --features loom --lib loom_model
	$(CARGO) test -p lutra-lua --features shuttle --lib liveness::model
	$(CARGO) test -p lutra-sched --features shuttle --lib queue::idle::model
	$(CARGO) test -p lutra-sched --features shuttle --lib queue::transactional::model
	$(CARGO) test -p lutra-lua --features shuttle --lib channel::core::model

# C programs written against lutra/stm.h, built and run against liblutra.
test-c:
	$(MAKE) -C tests/c run

# Programs written with GCC's -fgnu-tm, run against GCC's libitm and Lutra's.
test-itm:
	$(MAKE) -C tests/itm run

# The loadable module (`require "lutra"` / `require "luaproc"`) under a stock lua5.4:
# built on its own (it links against the host's Lua), then tests/module/*.lua.
test-module:
	CARGO="$(CARGO)" scripts/test-module.sh

# The LuaRocks package (lutra-scm-1.rockspec): `luarocks make` into a fresh tree, then
# `require "lutra"` / `require "luaproc"` from it (debug build: seconds after
# test-module).
test-rock:
	CARGO="$(CARGO)" scripts/test-rock.sh

# Every seed's experiment beside its reference, with charts and a report
# (target/bench/suite/report.md and report.html): `make bench` is the full run
# (≈ 15 min on 2 cores), `make bench-quick` the ≈ 1 min one (CI runs it),
# `make bench-charts` a full run that also refreshes the README's charts in docs/bench.
# A part: `make bench BENCH_ARGS="seed000 seed004"`.
bench: bench-build
	target/release/lutra-bench $(BENCH_ARGS)

bench-quick: bench-build
	target/release/lutra-bench --quick $(BENCH_ARGS)

bench-charts: bench-build
	rm -f docs/bench/*.svg docs/bench/report.md
	target/release/lutra-bench --publish docs/bench $(BENCH_ARGS)

bench-build:
	$(CARGO) build --release -p lutra-bench --bins
	$(CARGO) build --release -p lutra-cli -p lutra-capi

lint:
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy --workspace --all-targets -- -D warnings

# C programs against Lutra (stm.h, liblutra.a) beside the sequential build and GCC's
# libitm (bench/c): tables on stdout, CSV in target/bench/cbench.csv.
# `make bench-c CBENCH_ARGS=--quick` for a ~20 s run; `CBENCH_ARGS=--count` for
# instructions per operation (callgrind).
.PHONY: bench-c
bench-c:
	$(CARGO) run --release -p lutra-bench --bin cbench -- $(CBENCH_ARGS)

# Lua programs under `lutra` beside stock lua5.4 (seeds 000, 001, 002): tables on
# stdout, CSV in target/bench/luabench.csv. `make bench-lua LUABENCH_ARGS=--quick`
# for a ~30 s run.
.PHONY: bench-lua
bench-lua:
	$(CARGO) build --release -p lutra-cli -p lutra-capi
	BUILD_ONLY=1 scripts/test-module.sh
	$(CARGO) run --release -p lutra-bench --bin luabench -- $(LUABENCH_ARGS)
