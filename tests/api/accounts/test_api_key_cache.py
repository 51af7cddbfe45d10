"""The web process's memory of API keys (issue 22): a known key costs no database read, and
a key revoked, rotated or whose account was deactivated anywhere (another process
included) is refused at the next request; without Redis every request reads the database.
A charge made with a known key takes its account's terms from the same memory, and a change
of those terms made anywhere reaches the next charge."""

from datetime import timedelta

import sqlalchemy as sa
from redis.exceptions import ConnectionError as RedisConnectionError

from app import create_app
from app.extensions import db
from app.models import Account, ApiKey, Membership, Role
from app.pix import brcode
from app.services import accounts, api_key_cache, api_keys
from tests.support import factories
from tests.support.charges import created, lifetime
from tests.support.http import assert_error


def _whoami(client, key: str):
    return client.get("/v1/test-probe/whoami", headers={"apikey": key})


def _statements_on(app, table: str, call) -> int:
    """How many statements `call` runs that name `table`."""
    seen: list[str] = []

    def capture(conn, cursor, statement, parameters, context, executemany):
        if f" {table} " in f"{statement} ".replace("\n", " "):
            seen.append(statement)

    with app.app_context():
        engine = db.engine
    sa.event.listen(engine, "before_cursor_execute", capture)
    try:
        call()
    finally:
        sa.event.remove(engine, "before_cursor_execute", capture)
    return len(seen)


def _owner_and_key(account_id: str) -> tuple[Membership, str]:
    """The account's owner (who may revoke and rotate) and its one key's id."""
    membership = db.session.scalar(
        sa.select(Membership).where(
            Membership.account_id == account_id, Membership.role == Role.OWNER
        )
    )
    key_id = db.session.scalar(sa.select(ApiKey.id).where(ApiKey.account_id == account_id))
    return membership, key_id


def test_a_key_this_process_knows_is_not_read_again(app, client, owner, redis):
    key = factories.make_api_key(app, owner.account_id)
    assert _whoami(client, key).status_code == 200
    assert _statements_on(app, "api_keys", lambda: _whoami(client, key)) == 0
    assert _whoami(client, key).json["accountId"] == owner.account_id


def test_a_key_revoked_by_another_process_is_refused_at_the_next_request(app, client, owner, redis):
    key = factories.make_api_key(app, owner.account_id)
    assert _whoami(client, key).status_code == 200  # remembered here
    other_process = create_app({**app.config, "TESTING": True})  # a memory of its own
    with other_process.app_context():
        api_keys.revoke(*_owner_and_key(owner.account_id))
        db.session.commit()
        db.engine.dispose()
    assert_error(_whoami(client, key), 401, "authentication_error", "unauthorized")


def test_a_deactivated_accounts_known_key_is_refused_at_once(app, client, owner, redis):
    key = factories.make_api_key(app, owner.account_id)
    assert _whoami(client, key).status_code == 200
    with app.app_context():
        db.session.get(Account, owner.account_id).active = False
        db.session.commit()
    assert_error(_whoami(client, key), 401, "authentication_error", "unauthorized")


def test_a_rotated_key_is_refused_once_the_rotation_returns(app, client, owner, redis):
    key = factories.make_api_key(app, owner.account_id)
    assert _whoami(client, key).status_code == 200
    with app.app_context():
        issued = api_keys.rotate(*_owner_and_key(owner.account_id))
        db.session.commit()
        fresh = issued.cleartext
    assert_error(_whoami(client, key), 401, "authentication_error", "unauthorized")
    assert _whoami(client, fresh).status_code == 200


def test_without_redis_every_request_reads_the_database(app, client, owner, redis, monkeypatch):
    key = factories.make_api_key(app, owner.account_id)
    assert _whoami(client, key).status_code == 200

    def unreachable(*args, **kwargs):
        raise RedisConnectionError("down")

    monkeypatch.setattr(redis.__class__, "eval", unreachable)
    monkeypatch.setattr(redis.__class__, "get", unreachable)
    assert _statements_on(app, "api_keys", lambda: _whoami(client, key)) == 1
    with app.app_context():  # revoked by a write nobody could announce
        db.session.execute(sa.update(ApiKey).values(revoked_at=sa.func.now()))
        db.session.commit()
    assert_error(_whoami(client, key), 401, "authentication_error", "unauthorized")


def test_a_change_written_around_the_application_is_trusted_no_longer_than_max_age(
    app, client, owner, redis, monkeypatch
):
    key = factories.make_api_key(app, owner.account_id)
    assert _whoami(client, key).status_code == 200
    with app.app_context():  # raw SQL: no generation moves
        db.session.execute(sa.update(ApiKey).values(revoked_at=sa.func.now()))
        db.session.commit()
    assert _whoami(client, key).status_code == 200  # still trusted, within MAX_AGE
    monkeypatch.setattr(api_key_cache, "MAX_AGE_SECONDS", -1)
    assert_error(_whoami(client, key), 401, "authentication_error", "unauthorized")


def test_a_charge_made_with_a_known_key_reads_nothing_of_its_account(app, client, owner, redis):
    key = factories.make_api_key(app, owner.account_id)
    created(client, key)  # the key, and its account's terms, remembered here
    assert _statements_on(app, "accounts", lambda: created(client, key)) == 0


def test_account_terms_changed_by_another_process_reach_the_next_charge(app, client, owner, redis):
    key = factories.make_api_key(app, owner.account_id)
    first = created(client, key)
    assert abs(lifetime(first) - timedelta(hours=1)) < timedelta(seconds=2)
    other_process = create_app({**app.config, "TESTING": True})  # a memory of its own
    with other_process.app_context():
        account = db.session.get(Account, owner.account_id)
        accounts.update_settings(account, {"city": "Campinas", "charge_expires_in": 600}, via="cli")
        db.session.commit()
        db.engine.dispose()

    after = created(client, key)
    assert brcode.parse(after["pix"]["br_code"]).merchant_city == "Campinas"
    assert abs(lifetime(after) - timedelta(seconds=600)) < timedelta(seconds=2)
