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

test: models postgres
	@if command -v cargo-nextest >/dev/null 2>&1; then \
		$(CARGO) nextest run --no-fail-fast; \
	else \
		$(CARGO) test --lib --bins --tests --no-fail-fast; \
	fi
	$(CARGO) test --doc

check: test
	$(CARGO) fmt --all --check
	$(CARGO) clippy --all-targets -- -D warnings
	RUSTDOCFLAGS="-D warnings" $(CARGO) doc --no-deps

bench: models
	$(CARGO) bench --bench embed
	$(CARGO) bench --bench search
	$(CARGO) bench --bench ingest
	$(CARGO) bench --bench cold
