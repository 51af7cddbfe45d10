"""PostgreSQL drops every connection of the deployed stack, as a restart or a failover does to
its clients: gunicorn's worker, the money worker and the sweeps carry on in the same
processes. Each pool finds the dropped connections when it hands them out and replaces them
(`app.extensions._replace_dropped_connection`), so no request answers 500 and no job is lost.
The server itself keeps running: restarting it would drop the test session's own
connections too, and what the stack's processes see is the same.

A statement running at the moment of the drop fails, as it would in a real restart (a sweep
runs every second here; a periodic job just runs again). So the logs are read from
`SETTLE_SECONDS` after the drop: from then on, every connection the processes use is one
their pools handed out after it was dropped. (psycopg names both cases `AdminShutdown`, so
the error cannot tell them apart; tests/faults/test_database_dropped.py checks the pools'
replacement in process, with nothing running at the drop.)"""

import time

import psycopg
import pytest

from tests.support.deployed import new_charge, pay, released

pytestmark = pytest.mark.slow

RELEASE_SECONDS = 30
SETTLE_SECONDS = 2  # for a statement killed mid-flight to be logged


@pytest.fixture(autouse=True)
def _postgres_only(is_postgres):
    if not is_postgres:
        pytest.skip("PostgreSQL only: a SQLite file has no server that could drop connections")


def _drop_every_connection(database_url: str) -> int:
    """Terminate, server side, every connection to the stack's database, and wait (up to 5 s
    each) until each has exited."""
    with psycopg.connect(database_url, autocommit=True) as connection:
        return connection.execute(
            "SELECT count(pg_terminate_backend(pid, 5000)) FROM pg_stat_activity "
            "WHERE datname = current_database() AND pid <> pg_backend_pid()"
        ).fetchone()[0]


def test_the_stack_carries_on_after_postgresql_dropped_every_connection(deployed):
    charge = new_charge(deployed, amount=2_500)
    pay(deployed, charge)
    before = deployed.wait_for(lambda: released(deployed), RELEASE_SECONDS, "a first release")

    assert _drop_every_connection(deployed.database_url) >= 1  # the web's pool at least
    time.sleep(SETTLE_SECONDS)
    logged_before = {name: len(deployed.log(name)) for name in deployed.log_paths}

    assert deployed.api("GET", f"/v1/charges/{charge['id']}").status_code == 200
    later = new_charge(deployed, amount=4_000)
    pay(deployed, later)
    deployed.wait_for(
        lambda: released(deployed, total_above=before["total"]),
        RELEASE_SECONDS,
        "the payment made after the drop to be released by the jobs",
    )
    for name, length in logged_before.items():
        assert "Traceback" not in deployed.log(name)[length:], deployed.logs()
