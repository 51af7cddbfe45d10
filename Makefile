# Shortcuts for the README's commands and the benchmark (bench/README.md).
# `make bench BENCH_ARGS="--workers 4 --json"` passes options to the benchmark.

VENV_PYTHON := .venv/bin/python
BENCH_ARGS ?=

.PHONY: bench test run

bench:
	@$(VENV_PYTHON) -c "import requests" 2>/dev/null || { \
		echo "No .venv with the test requirements: run ./scripts/test once first." >&2; exit 1; }
	$(VENV_PYTHON) bench/charges.py $(BENCH_ARGS)

test:
	./scripts/test

run:
	./scripts/run
