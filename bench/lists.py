"""Benchmark: the list endpoints (charges, payments, dispute cases) over a small and a large
history, under gunicorn + PostgreSQL + Redis.

Usage: `.venv/bin/python bench/lists.py [--sizes 10000 1000000 --repeats 20 --json]` or
`make bench-lists`. Never part of the test suite.

What it does, in one run on this machine:

1. Creates a throwaway PostgreSQL database and flushes the benchmark's Redis DB (14 by
   default), like the other benchmarks; migrates; creates one account with a test API key
   per size in `--sizes`, and another account whose rows share the tables.
2. Seeds each measured account with as many transactions as its size (bench/common.py's
   `SEED_TRANSACTIONS_SQL`: one `INSERT … SELECT generate_series`, created over the last 400
   days, 1 % of them for one customer), the other account with a quarter of the largest
   size, and one dispute case per transaction (`INSERT … SELECT` from the transactions
   without a case). Then `VACUUM (ANALYZE)`. All accounts share the tables, so the small
   account's figures are taken with the large history next to it (as on a real platform).
3. Starts the app under gunicorn (bench/charges.py's `gunicorn`, rate limits raised).
4. Times each case (one list request with its query) `--repeats` times after one uncounted
   round, one request at a time, interleaved: each round runs every case for every size, so
   the machine's load drifts over all sizes alike. The cases: first pages, a page 5 reached
   by following `next_cursor`, a cursor 90 % deep into the account's history, and the
   filters each endpoint takes (status, type, customer, charge, a one-day window), with and
   without the deep cursor. `GET /v1/payments` pages by `page` (offset), not by cursor: its
   deep page is an offset 90 % deep, and it counts `total` on every call.
5. Signs a member of each measured account in to the dashboard (a session, as a browser
   has) and times its search box (`?q=`, issue 21) the same way, interleaved: the payments
   list without a search, a CPF typed with its punctuation (1 % of the rows), the first 8
   characters of a payment's id 90 % deep, a text nothing matches, and a dispute's id
   prefix on the disputes list. Each answer must show what was searched for.
6. In this process with the app (`create_app`, the run's environment), runs each case once
   through Flask's test client, captures its statements on transactions, med_cases and
   med_case_evidence, and replays each as `EXPLAIN (ANALYZE, BUFFERS)`.
7. Prints p50 and p99 per case and size, the ratio of the largest size to the smallest
   (flagged when a cursor list's p50 grows more than `CURSOR_RATIO_LIMIT` times), and the
   plans; with `--json` also one JSON object. Stops gunicorn, drops the database and
   flushes Redis at the end, also on failure, Ctrl-C or SIGTERM. Any error makes the exit
   status 1; slow figures never do (they are figures, not assertions).
"""

import argparse
import json
import re
import sys
import time
from contextlib import ExitStack
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from urllib.parse import urlencode

import psycopg
import requests
from charges import add_gunicorn_options, app_environment, gunicorn, gunicorn_description
from common import (
    BenchmarkError,
    Setup,
    argument_parser,
    at_least,
    create_test_account,
    explained_statements,
    flask_cli,
    heading,
    machine_facts,
    migrated_setup,
    percentile_ms,
    run,
    seed_transactions,
    time_get,
    vacuum_analyze,
)
from webhooks import app_context

CURSOR_RATIO_LIMIT = 1.5  # issue 10: cursor lists within 1.5x from small to large
OTHER_ACCOUNT_SHARE = 0.25  # the other account's rows, per row of the measured account
DEEP_FRACTION = 0.9  # how far into the account's history the deep cursor (or page) sits
FOLLOWED_PAGES = 4  # next_cursor followed this many times: the timed page is the fifth
PAYMENTS_PAGE_LIMIT = 20  # GET /v1/payments's default limit
CUSTOMER_DOCUMENT = "52998224725"  # a valid CPF: 1 % of the seeded transactions
WINDOW_DAYS_AGO = 200  # the one-day created_* window sits this far back
TABLES = ("transactions", "med_cases", "med_case_evidence")
SEARCH_PASSWORD = "bench search password"  # noqa: S105 (a throwaway database's member)
CUSTOMER_DOCUMENT_TYPED = "529.982.247-25"  # CUSTOMER_DOCUMENT as a person types it
NOTHING_MATCHES = "pedido-inexistente"
CSRF_TOKEN = re.compile(r'name="csrf_token" type="hidden" value="([^"]+)"')

# One case per transaction of the account that has none yet, opened within 30 days of it
# (never in the future). Enum columns of med_cases hold the members' VALUES (open, med).
SEED_CASES_SQL = """
WITH draws AS (
    SELECT t.id AS transaction_id, t.amount, t.currency,
           least(now(), t.created_at + random() * interval '30 days') AS created_at,
           random() AS r_status, random() AS r_type
    FROM transactions AS t
    WHERE t.account_id = %(account_id)s
      AND NOT EXISTS (SELECT 1 FROM med_cases AS m WHERE m.transaction_id = t.id)
)
INSERT INTO med_cases (
    id, account_id, mode, transaction_id, external_id, source, type, status, amount,
    currency, held_amount, amount_mismatch, under_review, method, reason, response_deadline,
    opened_at, closed_at, created_at, updated_at
)
SELECT 'med_' || gen_random_uuid()::text, %(account_id)s, 'TEST',
       transaction_id, 'bench-' || transaction_id, 'sandbox',
       CASE WHEN r_type < 0.70 THEN 'med' WHEN r_type < 0.90 THEN 'chargeback'
            WHEN r_type < 0.98 THEN 'dispute' ELSE 'fraud' END,
       CASE WHEN r_status < 0.10 THEN 'open' WHEN r_status < 0.15 THEN 'appealed'
            WHEN r_status < 0.45 THEN 'accepted' WHEN r_status < 0.70 THEN 'rejected'
            ELSE 'closed' END,
       amount, currency, 0, false, false, 'PIX', 'bench', created_at + interval '10 days',
       created_at, CASE WHEN r_status >= 0.15 THEN created_at + interval '7 days' END,
       created_at, created_at
FROM draws
"""

# The row `OFFSET %(offset)s` into the account's list order, newest first.
DEEP_ROW_SQL = {
    "transactions": "SELECT id FROM transactions WHERE account_id = %(account_id)s "
    "AND mode = 'TEST' ORDER BY created_at DESC, id DESC OFFSET %(offset)s LIMIT 1",
    "customer": "SELECT id FROM transactions WHERE account_id = %(account_id)s "
    "AND mode = 'TEST' AND payer_document = %(document)s "
    "ORDER BY created_at DESC, id DESC OFFSET %(offset)s LIMIT 1",
    "med_cases": "SELECT id, transaction_id FROM med_cases WHERE account_id = %(account_id)s "
    "AND mode = 'TEST' ORDER BY created_at DESC, id DESC OFFSET %(offset)s LIMIT 1",
}


@dataclass
class Case:
    """One list request: the endpoint's path and its query; `cursor` says whether the list
    pages by cursor (the 1.5x promise) or by offset."""

    endpoint: str
    label: str
    path: str
    query: dict[str, str | int] = field(default_factory=dict)
    cursor: bool = True

    @property
    def name(self) -> str:
        return f"{self.endpoint}: {self.label}"

    @property
    def url_path(self) -> str:
        return f"{self.path}?{urlencode(self.query)}" if self.query else self.path


def parse_args() -> argparse.Namespace:
    parser = argument_parser(
        "GET /v1/charges, /v1/payments and /v1/med/cases over a small and a large history "
        "(gunicorn + PostgreSQL + Redis), with EXPLAIN of their statements."
    )
    parser.add_argument(
        "--sizes",
        type=at_least(100),
        nargs="+",
        default=[10_000, 1_000_000],
        help="transactions (and dispute cases) of each measured account, one account per "
        "size (default 10000 1000000)",
    )
    parser.add_argument(
        "--repeats",
        type=at_least(1),
        default=20,
        help="timed calls per case and size, after one uncounted (default 20)",
    )
    add_gunicorn_options(parser)
    parser.add_argument("--json", action="store_true", help="also print one JSON object")
    args = parser.parse_args()
    args.sizes = sorted(set(args.sizes))
    return args


def seed_tables(database_url: str, accounts: dict[int, str], other_account: str) -> dict:
    """Each measured account's transactions (its size), the other account's (a quarter of the
    largest size), one case per transaction, then VACUUM (ANALYZE); the seconds of each step."""
    started = time.perf_counter()
    for size, account_id in accounts.items():
        seed_transactions(database_url, account_id, size, CUSTOMER_DOCUMENT)
    seed_transactions(database_url, other_account, round(max(accounts) * OTHER_ACCOUNT_SHARE))
    transactions_seconds = time.perf_counter() - started
    started = time.perf_counter()
    with psycopg.connect(database_url) as conn:
        for account_id in [*accounts.values(), other_account]:
            conn.execute(SEED_CASES_SQL, {"account_id": account_id})
        conn.commit()
    cases_seconds = time.perf_counter() - started
    return {
        "transactions_s": round(transactions_seconds, 1),
        "cases_s": round(cases_seconds, 1),
        "vacuum_analyze_s": round(vacuum_analyze(database_url, *TABLES[:2]), 1),
    }


def table_rows(database_url: str) -> dict[str, int]:
    with psycopg.connect(database_url) as conn:
        return {
            table: conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0]  # noqa: S608
            for table in TABLES[:2]
        }


def deep_rows(database_url: str, account_id: str, size: int) -> dict[str, str]:
    """Ids DEEP_FRACTION into the account's history: a charge, a customer's charge, a case
    (and its charge)."""
    with psycopg.connect(database_url) as conn:

        def row(kind: str, offset: int) -> tuple:
            found = conn.execute(
                DEEP_ROW_SQL[kind],
                {"account_id": account_id, "offset": offset, "document": CUSTOMER_DOCUMENT},
            ).fetchone()
            if found is None:
                raise BenchmarkError(f"No {kind} row {offset} deep: the seed is too small.")
            return found

        deep = int(size * DEEP_FRACTION)
        customer_rows = conn.execute(
            "SELECT count(*) FROM transactions WHERE account_id = %s AND payer_document = %s",
            (account_id, CUSTOMER_DOCUMENT),
        ).fetchone()[0]
        case_id, case_charge = row("med_cases", deep)
        return {
            "charge": row("transactions", deep)[0],
            "customer_charge": row("customer", int(customer_rows * DEEP_FRACTION))[0],
            "case": case_id,
            "case_charge": case_charge,
        }


def followed_cursor(
    session: requests.Session, base_url: str, api_key: str, path: str, pages: int
) -> str:
    """The `next_cursor` after following `pages` pages from the first."""
    cursor = None
    for _ in range(pages):
        query = f"?starting_after={cursor}" if cursor else ""
        _, answer = time_get(session, f"{base_url}{path}{query}", api_key, 1, warmup=0)
        cursor = answer["next_cursor"]
        if cursor is None:
            raise BenchmarkError(f"{path} has fewer than {pages + 1} pages.")
    return cursor


def after(cursor: str, **filters: str) -> dict[str, str]:
    """A list query: the filters, and the page after `cursor`."""
    return {**filters, "starting_after": cursor}


def cases(
    session: requests.Session, base_url: str, api_key: str, size: int, deep: dict[str, str]
) -> list[Case]:
    """The measured requests for one size (the cursors depend on the rows seeded)."""
    day_start = (datetime.now(UTC) - timedelta(days=WINDOW_DAYS_AGO)).replace(
        hour=0, minute=0, second=0, microsecond=0
    )
    window = {
        "created_after": day_start.isoformat(),
        "created_before": (day_start + timedelta(days=1)).isoformat(),
    }
    charge_cursor = "ch_" + deep["charge"]
    case_cursor = deep["case"]
    page_5 = {
        path: followed_cursor(session, base_url, api_key, path, FOLLOWED_PAGES)
        for path in ("/v1/charges", "/v1/med/cases")
    }
    charges, cases_path, payments = "/v1/charges", "/v1/med/cases", "/v1/payments"
    deep_page = max(1, int(size * DEEP_FRACTION) // PAYMENTS_PAGE_LIMIT)
    customer = {"customer_id": CUSTOMER_DOCUMENT}
    return [
        Case("charges", "first page", charges),
        Case("charges", "page 5 (cursor)", charges, after(page_5[charges])),
        Case("charges", "deep cursor", charges, after(charge_cursor)),
        Case("charges", "status=paid, deep", charges, after(charge_cursor, status="paid")),
        Case("charges", "status=failed, deep", charges, after(charge_cursor, status="failed")),
        Case("charges", "status=pending, first", charges, {"status": "pending"}),
        Case("charges", "status=pending, deep", charges, after(charge_cursor, status="pending")),
        Case("charges", "customer, first", charges, customer),
        Case(
            "charges",
            "customer, deep",
            charges,
            after("ch_" + deep["customer_charge"], **customer),
        ),
        Case("charges", "one-day window", charges, window),
        Case("payments", "page 1", payments, cursor=False),
        Case("payments", "page 5", payments, {"page": 5}, cursor=False),
        Case("payments", "deep page", payments, {"page": deep_page}, cursor=False),
        Case("payments", "status=PAID, page 1", payments, {"status": "PAID"}, cursor=False),
        Case(
            "payments",
            "one-day window, page 1",
            payments,
            {"startDate": window["created_after"], "endDate": window["created_before"]},
            cursor=False,
        ),
        Case("disputes", "first page", cases_path),
        Case("disputes", "page 5 (cursor)", cases_path, after(page_5[cases_path])),
        Case("disputes", "deep cursor", cases_path, after(case_cursor)),
        Case("disputes", "status=open, deep", cases_path, after(case_cursor, status="open")),
        Case("disputes", "type=fraud, deep", cases_path, after(case_cursor, type="fraud")),
        Case("disputes", "charge_id", cases_path, {"charge_id": "ch_" + deep["case_charge"]}),
        Case("disputes", "one-day window", cases_path, window),
    ]


@dataclass
class SearchCase:
    """One dashboard list page with what was typed in its search box; `shows` is a text its
    answer must contain (the row found), or None for no row to find."""

    label: str
    path: str
    typed: str | None
    shows: str | None

    @property
    def url_path(self) -> str:
        return f"{self.path}?{urlencode({'q': self.typed})}" if self.typed else self.path


def dashboard_session(env: dict[str, str], base_url: str, account_id: str) -> requests.Session:
    """A member of the account (OWNER, added with `flask users add`) signed in to the
    dashboard through its login form, as a browser is."""
    email = f"finance-{account_id[:8]}@bench.example.com"
    flask_cli(env, "users", "add", email, "--password", SEARCH_PASSWORD,
              "--account", account_id, "--role", "OWNER")  # fmt: skip
    session = requests.Session()
    form = session.get(f"{base_url}/dashboard/login", timeout=30)
    token = CSRF_TOKEN.search(form.text)
    answer = session.post(
        f"{base_url}/dashboard/login",
        data={"csrf_token": token[1] if token else "", "email": email, "password": SEARCH_PASSWORD},
        allow_redirects=False,
        timeout=30,
    )
    if answer.status_code not in (302, 303):
        raise BenchmarkError(f"Dashboard login: {answer.status_code} {answer.text[:300]}")
    return session


def search_cases(deep: dict[str, str]) -> list[SearchCase]:
    """The search box's measured requests for one size."""
    payment_prefix = deep["charge"][:8]
    case_prefix = deep["case"].removeprefix("med_")[:8]
    payments, disputes = "/dashboard/payments", "/dashboard/disputes"
    return [
        SearchCase("payments, no search", payments, None, None),
        SearchCase("payments, CPF (1 % of rows)", payments, CUSTOMER_DOCUMENT_TYPED, None),
        SearchCase("payments, id prefix, deep", payments, payment_prefix, payment_prefix),
        SearchCase("payments, no match", payments, NOTHING_MATCHES, None),
        SearchCase("disputes, id prefix, deep", disputes, case_prefix, case_prefix),
    ]


def time_searches(
    base_url: str,
    measured: dict[int, tuple[requests.Session, list[SearchCase]]],
    repeats: int,
) -> dict[int, dict[str, dict]]:
    """p50 and p99 of each search per size, interleaved as `time_cases` does; every answer
    must be a 200 showing the row searched for."""
    latencies: dict[tuple[int, str], list[float]] = {}
    labels = [case.label for case in next(iter(measured.values()))[1]]
    for round_number in range(1 + repeats):
        for index, label in enumerate(labels):
            for size, (session, cases_of_size) in measured.items():
                case = cases_of_size[index]
                started = time.perf_counter()
                answer = session.get(base_url + case.url_path, timeout=60)
                elapsed = time.perf_counter() - started
                if answer.status_code != 200 or (case.shows and case.shows not in answer.text):
                    raise BenchmarkError(f"GET {case.url_path}: {answer.status_code}")
                if round_number:
                    latencies.setdefault((size, label), []).append(elapsed)
    return {
        size: {
            label: {
                "p50_ms": percentile_ms(latencies[size, label], 0.5),
                "p99_ms": percentile_ms(latencies[size, label], 0.99),
            }
            for label in labels
        }
        for size in measured
    }


def time_cases(
    session: requests.Session,
    base_url: str,
    measured: dict[int, tuple[str, list[Case]]],
    repeats: int,
) -> dict[int, dict[str, dict]]:
    """p50 and p99 of each case per size, and how many items its last answer listed. The
    calls are interleaved (each round: every case, for every size), so a change in the
    machine's load weighs on all sizes alike."""
    latencies: dict[tuple[int, str], list[float]] = {}
    items: dict[tuple[int, str], int] = {}
    names = [case.name for case in next(iter(measured.values()))[1]]
    for round_number in range(1 + repeats):
        for index, name in enumerate(names):
            for size, (api_key, cases_of_size) in measured.items():
                case = cases_of_size[index]
                seconds, answer = time_get(session, base_url + case.url_path, api_key, 1, warmup=0)
                if round_number:  # the first round is uncounted
                    latencies.setdefault((size, name), []).extend(seconds)
                items[size, name] = len(answer["data"])
    return {
        size: {
            name: {
                "p50_ms": percentile_ms(latencies[size, name], 0.5),
                "p99_ms": percentile_ms(latencies[size, name], 0.99),
                "items": items[size, name],
            }
            for name in names
        }
        for size in measured
    }


def explain_cases(env: dict[str, str], api_key: str, measured: list[Case]) -> dict[str, dict]:
    """Each case once through the test client; its statements replayed under EXPLAIN: their
    number, total execution time and the slowest one's plan."""
    plans = {}
    with app_context(env):
        from flask import current_app

        from app.extensions import db

        client = current_app.test_client()
        for case in measured:

            def request(case: Case = case) -> None:
                answer = client.get(case.url_path, headers={"apikey": api_key})
                if answer.status_code != 200:
                    raise BenchmarkError(f"GET {case.url_path}: {answer.status_code}")

            summaries = [
                summary
                for _, summary in explained_statements(db.engine, db.session, request, TABLES)
            ]
            slowest = max(summaries, key=lambda summary: summary["execution_ms"])
            plans[case.name] = {
                "statements": len(summaries),
                "execution_ms": round(sum(s["execution_ms"] for s in summaries), 2),
                "slowest": slowest,
            }
    return plans


def configuration(args: argparse.Namespace, setup: Setup) -> dict:
    return {
        **machine_facts(),
        "gunicorn": gunicorn_description(args),
        "sizes": args.sizes,
        "other_account_share": OTHER_ACCOUNT_SHARE,
        "repeats": args.repeats,
        **setup.facts(),
    }


def ratios(sizes: list[dict]) -> dict[str, float]:
    """p50 at the largest size / p50 at the smallest, per case."""
    small, large = sizes[0]["timings"], sizes[-1]["timings"]
    return {name: round(large[name]["p50_ms"] / small[name]["p50_ms"], 2) for name in small}


def over_limit(measured: list[Case], ratio: dict[str, float]) -> list[str]:
    """The cursor cases whose p50 grew more than CURSOR_RATIO_LIMIT times."""
    names = [case.name for case in measured if case.cursor]
    return [name for name in names if ratio[name] > CURSOR_RATIO_LIMIT]


def report(config: dict, results: dict) -> str:
    sizes = results["sizes"]
    lines = heading("Acme Pay benchmark: list endpoints over a small and a large history", config)
    seed = results["seed"]
    lines.append(
        f"tables {results['table_rows']}; seeding {seed['transactions_s']} s transactions, "
        f"{seed['cases_s']} s cases, {seed['vacuum_analyze_s']} s VACUUM (ANALYZE)"
    )
    header = "".join(f"{'p50 @' + str(s['size']):>14}{'p99':>9}" for s in sizes)
    lines += [
        "",
        f"p50 and p99 in ms of {config['repeats']} calls after 1 uncounted, one at a time, "
        "interleaved across cases and sizes; "
        f"ratio = p50 at {sizes[-1]['size']} / p50 at {sizes[0]['size']} "
        f"(! over {CURSOR_RATIO_LIMIT}x on a cursor list; payments pages by offset)",
        f"{'case':<38}{'items':>6}{header}{'ratio':>9}",
    ]
    flagged = set(results["over_limit"])
    for name, ratio in results["ratios"].items():
        cells = "".join(
            f"{s['timings'][name]['p50_ms']:>14.1f}{s['timings'][name]['p99_ms']:>9.1f}"
            for s in sizes
        )
        mark = " !" if name in flagged else ""
        items = sizes[-1]["timings"][name]["items"]
        lines.append(f"{name:<38}{items:>6}{cells}{ratio:>8.2f}x{mark}")
    explain_header = "".join(f"{'ms @' + str(s['size']):>12}" for s in sizes)
    lines += [
        "",
        f"EXPLAIN (ANALYZE, BUFFERS): the execution ms of the statements on {', '.join(TABLES)} "
        "per request, summed, at each size; then, at the largest, the slowest statement's rows "
        "read and thrown away by a filter, and its scans",
        f"{'case':<38}{'stmts':>6}{explain_header}{'removed':>9}  scans",
    ]
    for name, plan in sizes[-1]["explain"].items():
        slowest = plan["slowest"]
        cells = "".join(f"{s['explain'][name]['execution_ms']:>12.2f}" for s in sizes)
        lines.append(
            f"{name:<38}{plan['statements']:>6}{cells}{slowest['rows_removed']:>9}  "
            f"{'; '.join(slowest['scans'])}"
        )
    search = results["search"]
    search_header = "".join(f"{'p50 @' + str(size):>14}{'p99':>9}" for size in search)
    smallest, largest = min(search, key=int), max(search, key=int)
    lines += [
        "",
        "The dashboard's search box (signed in, HTML pages), p50 and p99 in ms, interleaved "
        f"as above; ratio = p50 at {largest} / p50 at {smallest}",
        f"{'case':<38}{search_header}{'ratio':>9}",
    ]
    for label in search[smallest]:
        cells = "".join(
            f"{search[size][label]['p50_ms']:>14.1f}{search[size][label]['p99_ms']:>9.1f}"
            for size in search
        )
        ratio = search[largest][label]["p50_ms"] / search[smallest][label]["p50_ms"]
        lines.append(f"{label:<38}{cells}{ratio:>8.2f}x")
    if flagged:
        lines += ["", f"over {CURSOR_RATIO_LIMIT}x: {', '.join(sorted(flagged))}"]
    return "\n".join(lines)


def benchmark(args: argparse.Namespace) -> None:
    results: dict = {"sizes": []}
    with ExitStack() as stack:
        setup = stack.enter_context(migrated_setup(app_environment))
        config = configuration(args, setup)
        database_url, env = setup.database_url, setup.env
        keys = {size: create_test_account(env) for size in args.sizes}
        other_account, _ = create_test_account(env)
        accounts = {size: account_id for size, (account_id, _) in keys.items()}
        results["seed"] = seed_tables(database_url, accounts, other_account)
        results["table_rows"] = table_rows(database_url)
        base_url = stack.enter_context(gunicorn(env, args.workers, args.threads))
        deep = {
            size: deep_rows(database_url, account_id, size)
            for size, (account_id, _) in keys.items()
        }
        with requests.Session() as session:
            measured = {
                size: (api_key, cases(session, base_url, api_key, size, deep[size]))
                for size, (_, api_key) in keys.items()
            }
            timings = time_cases(session, base_url, measured, args.repeats)
        searches = {
            size: (
                stack.enter_context(dashboard_session(env, base_url, account_id)),
                search_cases(deep[size]),
            )
            for size, (account_id, _) in keys.items()
        }
        results["search"] = time_searches(base_url, searches, args.repeats)
        for size, (api_key, cases_of_size) in measured.items():
            results["sizes"].append(
                {
                    "size": size,
                    "timings": timings[size],
                    "explain": explain_cases(env, api_key, cases_of_size),
                }
            )
        results["ratios"] = ratios(results["sizes"])
        results["over_limit"] = over_limit(measured[args.sizes[0]][1], results["ratios"])
    print(report(config, results))
    if args.json:
        print(json.dumps({"config": config, **results}))


def main() -> int:
    return run(benchmark, parse_args())


if __name__ == "__main__":
    sys.exit(main())
