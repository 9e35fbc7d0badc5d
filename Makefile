# Lutra's entry points. `make demo` runs the main job, `make test` runs every test.
CARGO ?= cargo

.PHONY: demo test test-rust test-model test-c bench lint

demo:
	$(CARGO) run --release -p lutra-bench --bin demo

test: test-rust test-model test-c

test-rust:
	$(CARGO) test --workspace

# Model checks of the engine's protocols on shuttle's scheduler.
test-model:
	$(CARGO) test -p lutra-stm --features shuttle --test model

# C programs written against lutra/stm.h, built and run against liblutra.
test-c:
	$(MAKE) -C tests/c run

bench:
	$(CARGO) run --release -p lutra-bench --bin intset
	$(CARGO) run --release -p lutra-bench --bin bank
	$(CARGO) run --release -p lutra-bench --bin oversub

lint:
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy --workspace --all-targets -- -D warnings
