# Lutra's entry points. `make demo` runs the main job, `make test` runs every test.
CARGO ?= cargo

.PHONY: demo demo-stm test test-quick deps test-rust test-model test-c test-itm test-module test-rock test-docs install bench bench-quick bench-charts bench-build lint

# Where `make install` puts lutra, the C library and headers.
PREFIX ?= /usr/local

# Lua processes on every core: CPU-bound processes, elapsed time against the same work
# in one process, the speedup, and whether other programs kept the machine busy.
demo:
	$(CARGO) run --release -p lutra-cli --bin lutra -- examples/cores.lua

# The engine alone: a bank under 1–64 threads, throughput and aborts.
demo-stm:
	$(CARGO) run --release -p lutra-bench --bin demo

# `deps` first: what the tests need is checked (and installed, as root) before
# minutes of tests run. test-module builds the release module once; test-rock and
# test-docs (whose README replay installs it through LuaRocks) reuse that build.
test: deps
	$(MAKE) test-rust test-model test-c test-itm test-module test-rock test-docs

# The quick loop: the Rust tests, the C programs and the module under lua5.4. Skips
# the model checks, the -fgnu-tm programs, the LuaRocks package and the documentation
# (its blocks and the README's install replay). CI runs `make test`.
test-quick: deps
	$(MAKE) test-rust test-c test-module

# lutra in PREFIX/bin; liblutra.so, liblutra.a, lutra.pc and the headers
# (scripts/install-c.sh, which runs ldconfig or prints what to set); Lutra's
# libitm.so.1 for -fgnu-tm programs in PREFIX/lib/lutra/itm (docs/gnu-tm.md).
install:
	$(CARGO) build --release -p lutra-cli -p lutra-capi
	install -d "$(PREFIX)/bin" "$(PREFIX)/lib/lutra/itm"
	install -m 755 "$${CARGO_TARGET_DIR:-target}/release/lutra" "$(PREFIX)/bin/lutra"
	LUTRA_ITM_LINK_ONLY=1 scripts/build-itm.sh release >/dev/null
	install -m 755 "$${CARGO_TARGET_DIR:-target}/release/itm/libitm.so.1" "$(PREFIX)/lib/lutra/itm/libitm.so.1"
	ln -sf libitm.so.1 "$(PREFIX)/lib/lutra/itm/libitm.so"
	scripts/install-c.sh "$(PREFIX)"

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
# queues themselves (crates/lutra-sched/src/queue/idle.rs: lock mode's queue and idle
# protocol; crates/lutra-sched/src/queue/transactional.rs: the tm queue on its own
# engine, idle protocol and private buffers) and of a worker seat's hand-off to a spare
# thread (crates/lutra-sched/src/seat.rs); the first three again under loom.
test-model:
	$(CARGO) test -p lutra-stm --features shuttle --test model
	$(CARGO) test -p lutra-stm --features shuttle --lib epoch::model
	$(CARGO) test --release -p lutra-stm --features loom --test loom
	$(CARGO) test --release -p lutra-stm --features loom --lib loom_model
	$(CARGO) test -p lutra-lua --features shuttle --lib liveness::model
	$(CARGO) test -p lutra-sched --features shuttle --lib queue::idle::model
	$(CARGO) test -p lutra-sched --features shuttle --lib queue::transactional::model
	$(CARGO) test -p lutra-sched --features shuttle --lib seat::model
	$(CARGO) test -p lutra-lua --features shuttle --lib channel::core::model
	$(CARGO) test --release -p lutra-lua --features loom --lib liveness::model
	$(CARGO) test --release -p lutra-lua --features loom --lib channel::core::model
	$(CARGO) test --release -p lutra-sched --features loom --lib queue::idle::model

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
# `require "lutra"` / `require "luaproc"` from it (the release build test-module
# made: seconds).
test-rock:
	CARGO="$(CARGO)" scripts/test-rock.sh

# Every code block of README.md and docs/*.md, after the README's install steps
# replayed in a temporary HOME (tests/docs.sh; the Rust blocks are crates/lutra-docs'
# doctests, run by test-rust).
test-docs:
	tests/docs.sh

# Every seed's experiment beside its reference, with charts and a report
# (target/bench/suite/report.md and report.html): `make bench` is the full run
# (≈ 15 min on 2 cores), `make bench-quick` the ≈ 2 min one (CI runs it),
# `make bench-charts` a full run that also refreshes docs/performance.md's charts and
# report in docs/bench.
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
# instructions per operation (callgrind). With TINYSTM_SRC=<tinySTM's sources>, a
# tinySTM column too (bench/c/README.md).
.PHONY: bench-c
bench-c:
	$(CARGO) run --release -p lutra-bench --bin cbench -- $(CBENCH_ARGS)

# Lua programs under `lutra` beside stock lua5.4 (seeds 000, 001, 002): tables on
# stdout, CSV in target/bench/luabench.csv. `make bench-lua LUABENCH_ARGS=--quick`
# for a ~30 s run. With LUAPROC_SRC=<the original luaproc's sources>, experiment 2
# under the original luaproc too (scripts/build-luaproc.sh).
.PHONY: bench-lua
bench-lua:
	$(CARGO) build --release -p lutra-cli -p lutra-capi
	BUILD_ONLY=1 scripts/test-module.sh
	$(CARGO) run --release -p lutra-bench --bin luabench -- $(LUABENCH_ARGS)
