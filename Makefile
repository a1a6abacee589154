# convdex: the two commands of README.md, and the gates CI runs.
# Both `demo` and `test` provision the models first (pip, checksums, conversion, cached: runs
# once). The tests compare the default multilingual-e5-small with all-MiniLM-L6-v2, so both.

CARGO ?= cargo
PYTHON ?= python3

.PHONY: models postgres demo test check bench

models:
	$(PYTHON) models/provision.py --all

demo: models
	$(CARGO) run --release --example demo

# The team store's test starts a real PostgreSQL with pgvector from PyPI's pgserver.
postgres:
	$(PYTHON) -c "import pgserver" 2>/dev/null || $(PYTHON) -m pip install -q pgserver==0.1.4

# The tests run in the release profile by default: the build `make demo` and `cargo install`
# make is then the one the tests made (one optimized build of the dependencies, not two).
# `make test TEST_PROFILE=dev` builds with the dev profile instead (faster to rebuild after an
# edit of the crate; debug assertions and overflow checks on).
TEST_PROFILE ?= release

test: models postgres
	@if command -v cargo-nextest >/dev/null 2>&1; then \
		$(CARGO) nextest run --cargo-profile $(TEST_PROFILE) --no-fail-fast; \
	else \
		$(CARGO) test --profile $(TEST_PROFILE) --lib --bins --tests --no-fail-fast; \
	fi
	$(CARGO) test --profile $(TEST_PROFILE) --doc

check: test
	$(CARGO) fmt --all --check
	$(CARGO) clippy --release --all-targets -- -D warnings
	RUSTDOCFLAGS="-D warnings" $(CARGO) doc --release --no-deps

bench: models
	$(CARGO) bench --bench embed
	$(CARGO) bench --bench search
	$(CARGO) bench --bench ingest
	$(CARGO) bench --bench cold
