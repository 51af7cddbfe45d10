"""Test setup: one app per session on a migrated database, emptied after every test.

By default the suite uses a temporary SQLite file and an embedded Redis-compatible server;
with DATABASE_URL / REDIS_URL set (as `.ci/run` does) it uses PostgreSQL and Redis. The
schema is created by the migrations, never by `create_all`, so they are tested too.
"""

import os
from pathlib import Path

import pytest
from flask_migrate import upgrade

from app import create_app
from app.embedded_redis import EmbeddedRedis
from app.extensions import csrf, get_redis
from tests.support import factories, probe
from tests.support.deployed import (  # noqa: F401 (for tests/deployed and tests/browser)
    deployed,
    deployed_psp,
)
from tests.support.http import ReaderClient, bearer, login
from tests.support.receiver import receiving
from tests.support.rows import empty_tables


@pytest.fixture(scope="session")
def redis_url():
    if os.environ.get("REDIS_URL"):
        yield os.environ["REDIS_URL"]
        return
    server = EmbeddedRedis().start()
    yield server.url
    server.stop()


@pytest.fixture(scope="session")
def database_url(tmp_path_factory):
    return os.environ.get("DATABASE_URL") or f"sqlite:///{tmp_path_factory.mktemp('db')}/test.db"


@pytest.fixture(scope="session")
def app(database_url, redis_url, tmp_path_factory):
    os.environ["INSTANCE_PATH"] = str(tmp_path_factory.mktemp("instance"))
    from app.config import engine_options

    application = create_app(
        {
            "APP_ENV": "testing",
            "TESTING": True,
            "SQLALCHEMY_DATABASE_URI": database_url,
            "SQLALCHEMY_ENGINE_OPTIONS": engine_options(database_url),
            "REDIS_URL": redis_url,
            "PUBLIC_BASE_URL": "http://localhost",
            "WEBHOOK_ALLOW_PRIVATE_TEST_URLS": True,  # receivers run on localhost
        }
    )
    application.test_client_class = ReaderClient
    csrf.exempt(probe.bp)
    application.register_blueprint(probe.bp)
    with application.app_context():
        upgrade()
    return application


@pytest.fixture(autouse=True)
def _empty_tables(app):
    yield
    empty_tables(app)


@pytest.fixture
def redis(app):
    """The test Redis, emptied before and after the test."""
    with app.app_context():
        connection = get_redis()
    connection.flushdb()
    yield connection
    connection.flushdb()


@pytest.fixture
def client(app):
    return app.test_client()


@pytest.fixture
def is_postgres(database_url):
    return database_url.startswith("postgresql")


def pytest_collection_modifyitems(config, items):
    # The deployed stack lives from its first test to the end of the session, its processes
    # sweeping every second or two: its tests go last (in their own order), so no other test
    # runs beside that load.
    items.sort(key=lambda item: "deployed" in item.fixturenames)
    url = os.environ.get("DATABASE_URL", "")
    if url.startswith("postgresql"):
        return
    skip = pytest.mark.skip(reason="needs PostgreSQL (set DATABASE_URL; .ci/run does)")
    for item in items:
        if "postgres" in item.keywords:
            item.add_marker(skip)


@pytest.fixture
def owner(app):
    return factories.make_member(app)


@pytest.fixture
def owner_headers(client, owner):
    return bearer(login(client, owner))


@pytest.fixture
def account_id(app):
    """A merchant's account, named as a Brazilian shop would be."""
    return factories.make_account(app, "Padaria São João")


@pytest.fixture
def api_key(app, account_id):
    """A test-mode API key of `account_id`."""
    return factories.make_api_key(app, account_id)


@pytest.fixture
def receiver():
    """A local webhook receiver that records what it is sent; stopped after the test."""
    with receiving() as server:
        yield server


@pytest.fixture
def storage_root(app, tmp_path, monkeypatch) -> Path:
    """Evidence files in a directory of the test's own."""
    root = tmp_path / "evidence"
    root.mkdir()
    monkeypatch.setitem(app.config, "EVIDENCE_STORAGE_PATH", str(root))
    return root
