"""The idempotency store through real HTTP: one action per key, replays, conflicts, races."""

from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta

import pytest
import sqlalchemy as sa

from app.errors import Conflict
from app.extensions import db
from app.jobs.maintenance import prune_idempotency_keys
from app.models import Event, IdempotencyKey, KeyMode
from app.models.base import utcnow
from app.services import idempotency
from tests.support import factories
from tests.support.http import assert_error, count_rows
from tests.support.transactions import open_after

WRITES = "/v1/test-probe/writes"


@pytest.fixture
def api_key(app, owner):
    return factories.make_api_key(app, owner.account_id)


def _post(client, api_key, key, body, path=WRITES):
    headers = {"apikey": api_key}
    if key is not None:
        headers["Idempotency-Key"] = key
    return client.post(path, headers=headers, json=body)


def test_missing_key_is_refused(app, client, api_key):
    response = _post(client, api_key, None, {"amount": 1})
    assert_error(response, 400, "invalid_request_error", "invalid_request", param="Idempotency-Key")
    assert count_rows(app, Event) == 0


@pytest.mark.parametrize("key", ["1234567", "k" * 129])
def test_key_length_outside_8_to_128_is_refused(app, client, api_key, key):
    response = _post(client, api_key, key, {"amount": 1})
    assert_error(response, 400, "invalid_request_error", "invalid_request", param="Idempotency-Key")
    assert count_rows(app, Event) == 0


@pytest.mark.parametrize("key", ["12345678", "k" * 128])
def test_keys_of_8_and_128_characters_are_accepted(client, api_key, key):
    assert _post(client, api_key, key, {"amount": 1}).status_code == 201


def test_replay_returns_the_original_answer_and_acts_once(app, client, api_key):
    first = _post(client, api_key, "order-1001", {"amount": 500, "note": "a"})
    replay = _post(client, api_key, "order-1001", {"note": "a", "amount": 500})
    assert first.status_code == replay.status_code == 201
    assert replay.json == first.json
    assert replay.headers["Idempotent-Replayed"] == "true"
    assert "Idempotent-Replayed" not in first.headers
    assert count_rows(app, Event) == 1


def test_same_key_with_a_different_body_is_a_conflict(app, client, api_key):
    _post(client, api_key, "order-1002", {"amount": 500})
    response = _post(client, api_key, "order-1002", {"amount": 501})
    assert_error(response, 409, "conflict_error", "idempotency_key_reused")
    assert count_rows(app, Event) == 1


def test_keys_belong_to_one_account(app, client, api_key):
    other_key = factories.make_api_key(app, factories.make_account(app, "Outra"))
    assert _post(client, api_key, "shared-key-1", {"amount": 1}).status_code == 201
    other = _post(client, other_key, "shared-key-1", {"amount": 2})
    assert other.status_code == 201
    assert "Idempotent-Replayed" not in other.headers
    assert count_rows(app, Event) == 2


def test_keys_belong_to_one_route(app, client, api_key):
    _post(client, api_key, "route-key-1", {"amount": 1})
    response = client.post(
        "/v1/test-probe/body-writes",
        headers={"apikey": api_key},
        json={"amount": 1, "idempotencyKey": "route-key-1"},
    )
    assert response.status_code == 201
    assert count_rows(app, Event) == 2


@pytest.mark.parametrize("failure, status", [("validation", 400), ("crash", 500)])
def test_a_failed_request_leaves_nothing_and_frees_the_key(app, client, api_key, failure, status):
    """A refused or crashed request rolls back its work; the client may retry with the key."""
    assert (
        _post(client, api_key, "retry-me-1", {"amount": 1, "fail": failure}).status_code == status
    )
    assert count_rows(app, Event) == 0
    assert count_rows(app, IdempotencyKey) == 0
    retried = _post(client, api_key, "retry-me-1", {"amount": 1})
    assert retried.status_code == 201
    assert count_rows(app, Event) == 1


def test_key_in_the_body_for_payment_style_routes(app, client, api_key):
    path = "/v1/test-probe/body-writes"
    body = {"amount": 7, "idempotencyKey": "body-key-01"}
    first = client.post(path, headers={"apikey": api_key}, json=body)
    replay = client.post(path, headers={"apikey": api_key}, json=body)
    assert replay.json == first.json
    changed = client.post(path, headers={"apikey": api_key}, json={**body, "amount": 8})
    assert_error(changed, 409, "conflict_error", "idempotency_key_reused")
    short = client.post(
        path, headers={"apikey": api_key}, json={"amount": 1, "idempotencyKey": "short"}
    )
    assert_error(short, 400, "invalid_request_error", "invalid_request", param="idempotencyKey")
    assert count_rows(app, Event) == 1


def _in_flight_claim(app, account_id, key, body, age=timedelta(0)):
    """A claim as a request that is still running (or died) would have left it."""
    with app.app_context():
        db.session.add(
            IdempotencyKey(
                account_id=account_id,
                scope=f"test POST {WRITES}",
                key=key,
                request_hash=idempotency.request_fingerprint("POST", WRITES, body),
                lock_token="token-of-the-first-request",
                locked_at=utcnow() - age,
            )
        )
        db.session.commit()


def test_a_request_while_the_first_is_in_flight_gets_its_own_conflict(app, client, owner, api_key):
    _in_flight_claim(app, owner.account_id, "busy-key-1", b'{"amount": 1}')
    response = _post(client, api_key, "busy-key-1", {"amount": 1})
    assert_error(response, 409, "conflict_error", "idempotency_request_in_progress")
    assert count_rows(app, Event) == 0


def test_a_claim_abandoned_by_a_crashed_process_is_taken_over(app, client, owner, api_key):
    _in_flight_claim(
        app, owner.account_id, "stale-key-1", b'{"amount": 1}', age=timedelta(minutes=5)
    )
    response = _post(client, api_key, "stale-key-1", {"amount": 1})
    assert response.status_code == 201
    assert _post(client, api_key, "stale-key-1", {"amount": 1}).json == response.json
    assert count_rows(app, Event) == 1


def test_a_claim_commits_by_itself_with_no_transaction_around_it(app, client, api_key):
    """The claim's INSERT runs in autocommit: committed as it runs, with no BEGIN before it
    and no COMMIT after it (two round trips fewer for every financial write)."""
    claim = (f"INSERT INTO {IdempotencyKey.__tablename__} ", "WITH unflushed_commit ")
    response, opened = open_after(
        app, claim, lambda: _post(client, api_key, "autocommitted-1", {"amount": 1})
    )
    assert response.status_code == 201
    assert opened == [False]


@pytest.mark.postgres
def test_only_the_claim_commits_without_waiting_for_the_disk(app, client, api_key):
    """On PostgreSQL the claim's transaction has `synchronous_commit` off; the charge and the
    answer that stores it, written after it on the same pool, commit as every other
    transaction does (their commit flushes the claim too)."""
    try:
        with app.app_context(), db.engine.begin() as connection:
            connection.exec_driver_sql(_FORGET_COMMIT_SETTINGS)
            connection.exec_driver_sql(_NOTE_COMMIT_SETTINGS)
        for key in ("unflushed-1", "unflushed-2"):
            response = client.post(
                "/v1/charges",
                headers={"apikey": api_key, "Idempotency-Key": key},
                json={"amount": 1500, "payment_method": "pix"},
            )
            assert response.status_code == 201
        with app.app_context(), db.engine.connect() as connection:
            seen = connection.exec_driver_sql("SELECT * FROM commit_settings_seen").all()
    finally:
        with app.app_context(), db.engine.begin() as connection:
            connection.exec_driver_sql(_FORGET_COMMIT_SETTINGS)
    assert sorted(seen) == [
        ("idempotency_keys", "INSERT", "off"),
        ("idempotency_keys", "INSERT", "off"),
        ("idempotency_keys", "UPDATE", "on"),
        ("idempotency_keys", "UPDATE", "on"),
        ("transactions", "INSERT", "on"),
        ("transactions", "INSERT", "on"),
    ]


# The commit setting each write to the keys and the charges runs under, noted by triggers;
# repeatable, so a run stopped halfway leaves nothing that fails the next one.
_FORGET_COMMIT_SETTINGS = """
    DROP TRIGGER IF EXISTS note_key ON idempotency_keys;
    DROP TRIGGER IF EXISTS note_charge ON transactions;
    DROP FUNCTION IF EXISTS note_commit_setting();
    DROP TABLE IF EXISTS commit_settings_seen;
"""
_NOTE_COMMIT_SETTINGS = """
    CREATE TABLE commit_settings_seen (table_name text, operation text, setting text);
    CREATE FUNCTION note_commit_setting() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        INSERT INTO commit_settings_seen
        VALUES (TG_TABLE_NAME, TG_OP, current_setting('synchronous_commit'));
        RETURN NEW;
    END $$;
    CREATE TRIGGER note_key BEFORE INSERT OR UPDATE ON idempotency_keys
        FOR EACH ROW EXECUTE FUNCTION note_commit_setting();
    CREATE TRIGGER note_charge BEFORE INSERT ON transactions
        FOR EACH ROW EXECUTE FUNCTION note_commit_setting();
"""


def test_prune_job_forgets_keys_after_the_retention_period(app, client, api_key):
    _post(client, api_key, "old-key-001", {"amount": 1})
    _post(client, api_key, "new-key-001", {"amount": 1})
    with app.app_context():
        db.session.execute(
            sa.update(IdempotencyKey)
            .where(IdempotencyKey.key == "old-key-001")
            .values(created_at=utcnow() - timedelta(hours=25))
        )
        db.session.commit()
        assert prune_idempotency_keys() == 1
        assert db.session.scalars(sa.select(IdempotencyKey.key)).all() == ["new-key-001"]


def test_a_request_that_lost_its_claim_cannot_complete_it(app, client, owner, api_key):
    """A slow first request whose claim was taken over cannot store its answer or release."""
    _in_flight_claim(
        app, owner.account_id, "fenced-key-1", b'{"amount": 1}', age=timedelta(minutes=5)
    )
    retry = _post(client, api_key, "fenced-key-1", {"amount": 1})
    assert retry.status_code == 201
    with app.app_context():
        row = db.session.scalar(sa.select(IdempotencyKey))
        superseded = idempotency.Claim(key_id=row.id, lock_token="token-of-the-first-request")
        with pytest.raises(Conflict):
            idempotency.complete(superseded, 201, '{"id": "from-the-slow-request"}')
        db.session.rollback()
        idempotency.release(superseded)
    assert _post(client, api_key, "fenced-key-1", {"amount": 1}).json == retry.json


def test_live_and_test_keys_never_share_an_answer(app, client, owner, api_key):
    live_key = factories.make_api_key(app, owner.account_id, KeyMode.LIVE)
    in_test = _post(client, api_key, "mode-key-01", {"amount": 1})
    in_live = _post(client, live_key, "mode-key-01", {"amount": 1})
    assert in_live.status_code == 201
    assert "Idempotent-Replayed" not in in_live.headers
    assert in_live.json["id"] != in_test.json["id"]
    assert count_rows(app, Event) == 2


def test_body_keyed_route_refuses_a_body_that_is_not_an_object(app, client, api_key):
    for body in ([1, 2], "text", None):
        response = client.post("/v1/test-probe/body-writes", headers={"apikey": api_key}, json=body)
        assert_error(response, 400, "invalid_request_error", "invalid_request")
    assert count_rows(app, IdempotencyKey) == 0


@pytest.mark.postgres
def test_twenty_concurrent_requests_with_one_key_act_once(app, api_key):
    """On PostgreSQL, 20 simultaneous requests with one key make exactly one write."""
    body = {"amount": 990, "pause": 0.3}

    def send(_):
        with app.test_client() as client:
            response = _post(client, api_key, "race-key-0001", body)
            return response.status_code, response.get_json()

    with ThreadPoolExecutor(max_workers=20) as pool:
        results = list(pool.map(send, range(20)))
    created = [body for status, body in results if status == 201]
    in_progress = [body for status, body in results if status == 409]
    assert len(created) + len(in_progress) == 20
    assert all(b["error"]["code"] == "idempotency_request_in_progress" for b in in_progress)
    assert len({b["id"] for b in created}) == 1
    assert count_rows(app, Event) == 1
    with app.test_client() as client:
        assert _post(client, api_key, "race-key-0001", body).json == created[0]
