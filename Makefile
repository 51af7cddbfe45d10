# Shortcuts for the README's commands and the benchmarks (bench/README.md; results in
# docs/performance.md). `make bench` runs the five benchmarks, one after the other;
# `make bench-charges`, `make bench-webhooks`, `make bench-payments`, `make bench-fanout` and
# `make bench-lists` run one, `make bench-quick` runs the first four smaller, and
# `make bench-hotpaths` runs the profiler (not part of `make bench`). Options go
# through BENCH_ARGS (charges, e.g. BENCH_ARGS="--workers 4 --json"), WEBHOOKS_BENCH_ARGS
# (webhooks, e.g. "--deliveries 1000"), PAYMENTS_BENCH_ARGS (payments, e.g. "--concurrency
# 4"), FANOUT_BENCH_ARGS (fan-out, e.g. "--events 50"), LISTS_BENCH_ARGS (lists, e.g.
# "--sizes 10000 100000") and HOTPATHS_ARGS (profiler, e.g. "--stats-rows 100000").

VENV_PYTHON := .venv/bin/python
BENCH_ARGS ?=
WEBHOOKS_BENCH_ARGS ?=
PAYMENTS_BENCH_ARGS ?=
FANOUT_BENCH_ARGS ?=
LISTS_BENCH_ARGS ?=
HOTPATHS_ARGS ?=
CHARGES_BENCH = $(VENV_PYTHON) bench/charges.py $(BENCH_ARGS)
WEBHOOKS_BENCH = $(VENV_PYTHON) bench/webhooks.py $(WEBHOOKS_BENCH_ARGS)
PAYMENTS_BENCH = $(VENV_PYTHON) bench/payments.py $(PAYMENTS_BENCH_ARGS)
FANOUT_BENCH = $(VENV_PYTHON) bench/fanout.py $(FANOUT_BENCH_ARGS)
LISTS_BENCH = $(VENV_PYTHON) bench/lists.py $(LISTS_BENCH_ARGS)

.PHONY: bench bench-quick bench-charges bench-webhooks bench-payments bench-fanout bench-lists \
	bench-hotpaths bench-requirements test run translations

bench: bench-requirements
	$(CHARGES_BENCH)
	$(WEBHOOKS_BENCH)
	$(PAYMENTS_BENCH)
	$(FANOUT_BENCH)
	$(LISTS_BENCH)

# The same benchmarks, smaller, for a quick look at their ratios after a change to a hot path
# (issue 22): charge creation and GET against /healthz and the durable-write floor, webhook
# deliveries against a plain POST loop, finalisation and the stats over 50,000 rows, the
# fan-out over 20 events (2,000 deliveries).
bench-quick: bench-requirements
	$(VENV_PYTHON) bench/charges.py --requests 500 --warmup 20
	$(VENV_PYTHON) bench/webhooks.py --deliveries 480
	$(VENV_PYTHON) bench/payments.py --payments 20 --stats-rows 50000 --stats-repeats 3
	$(VENV_PYTHON) bench/fanout.py --events 20

bench-charges: bench-requirements
	$(CHARGES_BENCH)

bench-webhooks: bench-requirements
	$(WEBHOOKS_BENCH)

bench-payments: bench-requirements
	$(PAYMENTS_BENCH)

bench-fanout: bench-requirements
	$(FANOUT_BENCH)

bench-lists: bench-requirements
	$(LISTS_BENCH)

bench-hotpaths: bench-requirements
	$(VENV_PYTHON) bench/hotpaths.py $(HOTPATHS_ARGS)

bench-requirements:
	@$(VENV_PYTHON) -c "import requests" 2>/dev/null || { \
		echo "No .venv with the test requirements: run ./scripts/test once first." >&2; exit 1; }

test:
	./scripts/test

run:
	./scripts/run

# Pages' words (issue 21): extract the marked strings into app/translations/messages.pot, merge
# them into each locale's messages.po (translate the new entries there), and compile the .mo
# files the app reads. Both .po and .mo are committed; tests/core/test_translations.py fails
# when a .mo is stale or a string has no translation.
PYBABEL := .venv/bin/pybabel
translations:
	$(PYBABEL) -q extract -F babel.cfg -k _l -k translatable --no-location --sort-output --project "Acme Pay" \
		--copyright-holder "Acme Pay" -o app/translations/messages.pot .
	$(PYBABEL) -q update -i app/translations/messages.pot -d app/translations \
		--no-fuzzy-matching --ignore-obsolete --no-wrap
	$(PYBABEL) -q compile -d app/translations
