# Shortcuts for the README's commands and the benchmarks (bench/README.md).
# `make bench` runs the three benchmarks, one after the other; `make bench-charges`,
# `make bench-webhooks` and `make bench-payments` run one. Options go through BENCH_ARGS
# (charges, e.g. BENCH_ARGS="--workers 4 --json"), WEBHOOKS_BENCH_ARGS (webhooks, e.g.
# "--deliveries 1000") and PAYMENTS_BENCH_ARGS (payments, e.g. "--concurrency 4").

VENV_PYTHON := .venv/bin/python
BENCH_ARGS ?=
WEBHOOKS_BENCH_ARGS ?=
PAYMENTS_BENCH_ARGS ?=
CHARGES_BENCH = $(VENV_PYTHON) bench/charges.py $(BENCH_ARGS)
WEBHOOKS_BENCH = $(VENV_PYTHON) bench/webhooks.py $(WEBHOOKS_BENCH_ARGS)
PAYMENTS_BENCH = $(VENV_PYTHON) bench/payments.py $(PAYMENTS_BENCH_ARGS)

.PHONY: bench bench-charges bench-webhooks bench-payments bench-requirements test run

bench: bench-requirements
	$(CHARGES_BENCH)
	$(WEBHOOKS_BENCH)
	$(PAYMENTS_BENCH)

bench-charges: bench-requirements
	$(CHARGES_BENCH)

bench-webhooks: bench-requirements
	$(WEBHOOKS_BENCH)

bench-payments: bench-requirements
	$(PAYMENTS_BENCH)

bench-requirements:
	@$(VENV_PYTHON) -c "import requests" 2>/dev/null || { \
		echo "No .venv with the test requirements: run ./scripts/test once first." >&2; exit 1; }

test:
	./scripts/test

run:
	./scripts/run
