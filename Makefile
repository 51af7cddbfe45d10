# Shortcuts for the README's commands and the benchmarks (bench/README.md).
# `make bench` runs both benchmarks, one after the other; `make bench-charges` and
# `make bench-webhooks` run one. Options go through BENCH_ARGS (charges, e.g.
# BENCH_ARGS="--workers 4 --json") and WEBHOOKS_BENCH_ARGS (webhooks, e.g. "--deliveries 1000").

VENV_PYTHON := .venv/bin/python
BENCH_ARGS ?=
WEBHOOKS_BENCH_ARGS ?=
CHARGES_BENCH = $(VENV_PYTHON) bench/charges.py $(BENCH_ARGS)
WEBHOOKS_BENCH = $(VENV_PYTHON) bench/webhooks.py $(WEBHOOKS_BENCH_ARGS)

.PHONY: bench bench-charges bench-webhooks bench-requirements test run

bench: bench-requirements
	$(CHARGES_BENCH)
	$(WEBHOOKS_BENCH)

bench-charges: bench-requirements
	$(CHARGES_BENCH)

bench-webhooks: bench-requirements
	$(WEBHOOKS_BENCH)

bench-requirements:
	@$(VENV_PYTHON) -c "import requests" 2>/dev/null || { \
		echo "No .venv with the test requirements: run ./scripts/test once first." >&2; exit 1; }

test:
	./scripts/test

run:
	./scripts/run
