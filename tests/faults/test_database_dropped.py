"""PostgreSQL drops every connection (a failover, a restart, an idle timeout at a proxy): the
next requests and jobs succeed in the same processes. The pool sees that the server closed a
connection before handing it out (its socket has the notice and the end of file to read) and
replaces it; nothing has to be restarted, and a live connection costs no round trip."""

import pytest
import sqlalchemy as sa

from app.config import engine_options
from app.extensions import db
from app.models import WebhookDelivery
from tests.support import charges, factories
from tests.support.processes import wait_for

pytestmark = pytest.mark.slow


@pytest.fixture(autouse=True)
def _postgres_only(is_postgres):
    if not is_postgres:
        pytest.skip("PostgreSQL only: a SQLite file has no server that could drop connections")


def test_requests_after_the_server_dropped_every_connection_succeed(app, client, database_url):
    account_id = factories.make_account(app)
    api_key = factories.make_api_key(app, account_id)
    charge = charges.created(client, api_key)

    assert _drop_every_other_connection(database_url) >= 1  # the app's pooled connections

    assert charges.get(client, api_key, charge["id"]).status_code == 200
    assert charges.create(client, api_key).status_code == 201


def test_a_worker_carries_on_after_the_server_dropped_its_connections(
    app, client, app_redis, receiver, workers, database_url
):
    account_id = factories.make_account(app)
    api_key = factories.make_api_key(app, account_id)
    response = client.post(
        "/v1/webhooks/endpoints",
        json={"url": receiver.url, "events": ["charge.created"]},
        headers={"apikey": api_key},
    )
    assert response.status_code == 201, response.get_json()
    workers.start()
    charges.created(client, api_key)
    wait_for(lambda: len(_delivered(app)) == 1, 30, "the first delivery")

    assert _drop_every_other_connection(database_url) >= 1

    charges.created(client, api_key)
    wait_for(lambda: len(_delivered(app)) == 2, 30, "a delivery after the drop")
    assert len(receiver.received) == 2


def test_handing_out_a_live_connection_sends_nothing_to_the_server(database_url):
    engine = sa.create_engine(database_url, **{**engine_options(database_url), "pool_size": 1})
    try:
        with engine.connect() as connection:
            pid = connection.execute(sa.text("SELECT pg_backend_pid()")).scalar_one()
        assert _last_statement_of(database_url, pid) == "ROLLBACK"  # the pool's reset on return
        with engine.connect() as connection:  # the same pooled connection, handed out again
            assert _last_statement_of(database_url, pid) == "ROLLBACK"
            assert connection.execute(sa.text("SELECT pg_backend_pid()")).scalar_one() == pid
    finally:
        engine.dispose()


def _last_statement_of(database_url: str, pid: int) -> str:
    engine = sa.create_engine(database_url, poolclass=sa.pool.NullPool)
    with engine.connect() as connection:
        statement = connection.execute(
            sa.text("SELECT query FROM pg_stat_activity WHERE pid = :pid"), {"pid": pid}
        ).scalar_one()
    engine.dispose()
    return statement


def _drop_every_other_connection(database_url: str) -> int:
    """Terminate, server side, every connection to the test database but this one, and wait
    (up to 5 s each) until each has exited, as after a real restart."""
    engine = sa.create_engine(database_url, poolclass=sa.pool.NullPool)
    with engine.connect() as connection:
        dropped = connection.execute(
            sa.text(
                "SELECT count(pg_terminate_backend(pid, 5000)) FROM pg_stat_activity "
                "WHERE datname = current_database() AND pid <> pg_backend_pid()"
            )
        ).scalar_one()
    engine.dispose()
    return dropped


def _delivered(app) -> list[str]:
    with app.app_context():
        return db.session.scalars(
            sa.select(WebhookDelivery.id).where(WebhookDelivery.status == "DELIVERED")
        ).all()
