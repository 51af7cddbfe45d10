"""Fixtures for the fault tests: a real Redis the test can stop, workers it can kill, and a
receiver; everything they start is stopped at teardown, whatever the test did."""

import pytest

from app.extensions import redis_client
from tests.faults.processes import RedisServer, start_worker
from tests.support.processes import kill_group


@pytest.fixture
def redis_server():
    server = RedisServer().start()
    yield server
    server.stop()


@pytest.fixture
def app_redis(app, redis_server, monkeypatch):
    """The app (this process) on `redis_server`, with a client of its own; restored after."""
    monkeypatch.setitem(app.config, "REDIS_URL", redis_server.url)
    client = redis_client(redis_server.url)
    monkeypatch.setitem(app.extensions, "acme_redis", client)
    return client


@pytest.fixture
def workers(database_url, redis_server, tmp_path):
    """Start `python worker.py` processes on the test database and `redis_server` with
    `workers.start(**environment)`; every one still running is killed at teardown."""
    started = []

    class Workers:
        log = tmp_path / "workers.log"

        def start(self, module: str = "worker", **settings: str):
            process = start_worker(database_url, redis_server.url, self.log, module, **settings)
            started.append(process)
            return process

        def output(self) -> str:
            return self.log.read_text() if self.log.exists() else ""

    yield Workers()
    for process in started:
        kill_group(process)
