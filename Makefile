# Lutra's entry points. `make demo` runs the main job, `make test` runs every test.
CARGO ?= cargo

.PHONY: demo demo-stm test test-rust test-model test-c test-module bench bench-quick bench-charts bench-build lint

# Lua processes on every core: CPU-bound processes, elapsed time against the same work
# in one process, and the speedup.
demo:
	$(CARGO) run --release -p lutra-cli --bin lutra -- examples/cores.lua

# The engine alone: a bank under 1–64 threads, throughput and aborts.
demo-stm:
	$(CARGO) run --release -p lutra-bench --bin demo

test: test-rust test-model test-c test-module

test-rust:
	$(CARGO) test --workspace

# Model checks of the engine's protocols on shuttle's scheduler.
test-model:
	$(CARGO) test -p lutra-stm --features shuttle --test model

# C programs written against lutra/stm.h, built and run against liblutra.
test-c:
	$(MAKE) -C tests/c run

# The loadable module (`require "lutra"` / `require "luaproc"`) under a stock lua5.4:
# built on its own (it links against the host's Lua), then tests/module/*.lua.
test-module:
	CARGO="$(CARGO)" scripts/test-module.sh

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

# Lua programs under `lutra` beside stock lua5.4 (seeds 000, 001, 002): tables on
# stdout, CSV in target/bench/luabench.csv. `make bench-lua LUABENCH_ARGS=--quick`
# for a ~30 s run.
.PHONY: bench-lua
bench-lua:
	$(CARGO) build --release -p lutra-cli -p lutra-capi
	$(CARGO) run --release -p lutra-bench --bin luabench -- $(LUABENCH_ARGS)
