"""API keys over /v1/api-keys and API-key authentication, rule by rule from the contract."""

import base64
import hashlib
import re
from concurrent.futures import ThreadPoolExecutor

import pytest
import sqlalchemy as sa

from app.extensions import db
from app.models import ApiKey, AuditLog, Role
from tests.support import factories
from tests.support.http import assert_error, bearer, count_rows, login

ISSUE_FIELDS = {"id", "apiKey", "fingerprint", "prefix", "label", "createdAt", "mode"}
LIST_FIELDS = {"id", "prefix", "label", "createdAt", "mode"}


def _issue(client, headers, **body):
    response = client.post("/v1/api-keys", headers=headers, json=body)
    assert response.status_code == 201, response.json
    return response.json


def _whoami(client, key: str):
    return client.get("/v1/test-probe/whoami", headers={"apikey": key})


def test_issue_returns_the_key_once_in_the_documented_shape(app, client, owner_headers, owner):
    issued = _issue(client, owner_headers, label="checkout server", test=True)
    assert set(issued) == ISSUE_FIELDS
    assert issued["mode"] == "test"
    assert issued["label"] == "checkout server"
    assert re.fullmatch(r"ak_test_[A-Za-z0-9_-]{32}", issued["apiKey"])
    assert len(base64.urlsafe_b64decode(issued["apiKey"][8:])) == 24
    assert issued["prefix"] == issued["apiKey"][:12]
    assert issued["fingerprint"] == hashlib.sha256(issued["apiKey"].encode()).hexdigest()
    assert _whoami(client, issued["apiKey"]).json == {"accountId": owner.account_id, "mode": "test"}


def test_default_issue_is_a_live_key_without_label(client, owner_headers):
    issued = _issue(client, owner_headers)
    assert issued["mode"] == "live"
    assert issued["label"] is None
    assert issued["apiKey"].startswith("ak_live_")


def test_cleartext_is_never_stored(app, client, owner_headers):
    issued = _issue(client, owner_headers, test=True)
    with app.app_context():
        rows = db.session.execute(sa.select(ApiKey.__table__)).mappings().all()
        audit = db.session.execute(sa.select(AuditLog.__table__)).mappings().all()
    stored = repr(rows) + repr(audit)
    assert issued["apiKey"] not in stored
    assert issued["apiKey"][12:] not in stored


def test_label_longer_than_64_characters_is_refused(client, owner_headers):
    _issue(client, owner_headers, label="x" * 64)
    response = client.post("/v1/api-keys", headers=owner_headers, json={"label": "x" * 65})
    assert_error(response, 400, "invalid_request_error", "invalid_request", param="label")


def test_list_shows_metadata_only_and_the_callers_access(app, client, owner_headers, owner):
    issued = _issue(client, owner_headers, label="a", test=True)
    listing = client.get("/v1/api-keys", headers=owner_headers).json
    assert set(listing) == {"data", "access"}
    assert listing["access"] == {"canManage": True}
    assert [set(item) for item in listing["data"]] == [LIST_FIELDS]
    assert listing["data"][0]["id"] == issued["id"]
    assert issued["apiKey"] not in repr(listing)


def test_several_live_keys_coexist(client, owner_headers):
    keys = [_issue(client, owner_headers)["apiKey"] for _ in range(3)]
    assert all(_whoami(client, key).status_code == 200 for key in keys)
    assert len(client.get("/v1/api-keys", headers=owner_headers).json["data"]) == 3


def test_member_may_list_but_not_issue_rotate_or_revoke(app, client, owner, owner_headers):
    """Can a MEMBER manage API keys? (No: 403 API_KEY_ROLE_REQUIRED, nothing changes.)"""
    existing = _issue(client, owner_headers, test=True)
    member = factories.make_member(app, owner.account_id, Role.MEMBER)
    headers = bearer(login(client, member))
    listing = client.get("/v1/api-keys", headers=headers).json
    assert listing["access"] == {"canManage": False}
    assert len(listing["data"]) == 1
    before = count_rows(app, ApiKey)
    for response in (
        client.post("/v1/api-keys", headers=headers, json={}),
        client.post(f"/v1/api-keys/{existing['id']}/rotate", headers=headers, json={}),
        client.delete(f"/v1/api-keys/{existing['id']}", headers=headers),
    ):
        assert_error(response, 403, "permission_error", "API_KEY_ROLE_REQUIRED")
    assert count_rows(app, ApiKey) == before
    assert _whoami(client, existing["apiKey"]).status_code == 200


def test_admin_may_manage_keys(app, client, owner):
    admin = factories.make_member(app, owner.account_id, Role.ADMIN)
    headers = bearer(login(client, admin))
    issued = _issue(client, headers, test=True)
    assert client.get("/v1/api-keys", headers=headers).json["access"]["canManage"] is True
    assert client.delete(f"/v1/api-keys/{issued['id']}", headers=headers).json == {"revoked": True}


def test_rotate_kills_the_old_key_when_the_call_returns(client, owner_headers):
    old = _issue(client, owner_headers, label="pos", test=True)
    response = client.post(f"/v1/api-keys/{old['id']}/rotate", headers=owner_headers)
    assert response.status_code == 201
    new = response.json
    assert set(new) == ISSUE_FIELDS
    assert new["id"] != old["id"]
    assert (new["mode"], new["label"]) == ("test", "pos")
    assert_error(_whoami(client, old["apiKey"]), 401, "authentication_error", "unauthorized")
    assert _whoami(client, new["apiKey"]).status_code == 200
    ids = [k["id"] for k in client.get("/v1/api-keys", headers=owner_headers).json["data"]]
    assert ids == [new["id"]]


def test_rotate_takes_a_new_label_and_keeps_live_mode(client, owner_headers):
    old = _issue(client, owner_headers, label="old")
    new = client.post(
        f"/v1/api-keys/{old['id']}/rotate", headers=owner_headers, json={"label": "new"}
    ).json
    assert (new["mode"], new["label"]) == ("live", "new")
    assert new["apiKey"].startswith("ak_live_")


def test_a_rotated_key_cannot_be_rotated_again(client, owner_headers):
    old = _issue(client, owner_headers, test=True)
    assert client.post(f"/v1/api-keys/{old['id']}/rotate", headers=owner_headers).status_code == 201
    response = client.post(f"/v1/api-keys/{old['id']}/rotate", headers=owner_headers)
    assert_error(response, 404, "not_found_error", "not_found")


def test_revoke_is_permanent(app, client, owner_headers):
    issued = _issue(client, owner_headers, test=True)
    response = client.delete(f"/v1/api-keys/{issued['id']}", headers=owner_headers)
    assert (response.status_code, response.json) == (200, {"revoked": True})
    assert_error(_whoami(client, issued["apiKey"]), 401, "authentication_error", "unauthorized")
    assert client.get("/v1/api-keys", headers=owner_headers).json["data"] == []
    again = client.delete(f"/v1/api-keys/{issued['id']}", headers=owner_headers)
    assert (again.status_code, again.json) == (200, {"revoked": True})
    with app.app_context():
        actions = db.session.scalars(sa.select(AuditLog.action)).all()
    assert actions.count("api_key.revoked") == 1
    rotate = client.post(f"/v1/api-keys/{issued['id']}/rotate", headers=owner_headers)
    assert_error(rotate, 404, "not_found_error", "not_found")


def test_another_accounts_key_is_not_found_and_untouched(app, client, owner_headers):
    stranger = factories.make_member(app)
    foreign_key = _issue(client, bearer(login(client, stranger)), test=True)
    for response in (
        client.post(f"/v1/api-keys/{foreign_key['id']}/rotate", headers=owner_headers),
        client.delete(f"/v1/api-keys/{foreign_key['id']}", headers=owner_headers),
        client.delete("/v1/api-keys/no-such-key", headers=owner_headers),
    ):
        assert_error(response, 404, "not_found_error", "not_found")
    assert _whoami(client, foreign_key["apiKey"]).status_code == 200


def test_issue_rotate_revoke_are_audited_with_actor_and_fingerprint(
    app, client, owner, owner_headers
):
    issued = _issue(client, owner_headers, test=True)
    rotated = client.post(f"/v1/api-keys/{issued['id']}/rotate", headers=owner_headers).json
    client.delete(f"/v1/api-keys/{rotated['id']}", headers=owner_headers)
    with app.app_context():
        rows = db.session.scalars(sa.select(AuditLog).order_by(AuditLog.created_at)).all()
        trail = [(r.action, r.actor_user_id, r.subject_id, r.details["fingerprint"]) for r in rows]
        replaced = rows[1].details["replaced_fingerprint"]
    assert trail == [
        ("api_key.issued", owner.user_id, issued["id"], issued["fingerprint"]),
        ("api_key.rotated", owner.user_id, rotated["id"], rotated["fingerprint"]),
        ("api_key.revoked", owner.user_id, rotated["id"], rotated["fingerprint"]),
    ]
    assert replaced == issued["fingerprint"]


def test_api_key_authentication_is_exact(app, client, owner):
    """Missing, wrong, padded, truncated or case-changed keys all get 401 unauthorized."""
    key = factories.make_api_key(app, owner.account_id)
    assert _whoami(client, key).status_code == 200
    assert client.get("/v1/test-probe/whoami", headers={"APIKEY": key}).status_code == 200
    for presented in (
        None,
        "",
        f" {key}",
        f"{key} ",
        f"\t{key}",
        key[:-1],
        key + "A",
        key.upper(),
        "ak_test_" + "A" * 32,
    ):
        headers = {} if presented is None else {"apikey": presented}
        response = client.get("/v1/test-probe/whoami", headers=headers)
        assert_error(response, 401, "authentication_error", "unauthorized")


def test_bearer_token_is_not_an_api_key(client, owner, owner_headers):
    assert_error(
        client.get("/v1/test-probe/whoami", headers=owner_headers),
        401,
        "authentication_error",
        "unauthorized",
    )


def test_keys_of_a_deactivated_account_stop_working(app, client, owner):
    key = factories.make_api_key(app, owner.account_id)
    with app.app_context():
        from app.models import Account

        db.session.get(Account, owner.account_id).active = False
        db.session.commit()
    assert_error(_whoami(client, key), 401, "authentication_error", "unauthorized")


def test_last_used_time_is_recorded(app, client, owner):
    key = factories.make_api_key(app, owner.account_id)
    _whoami(client, key)
    with app.app_context():
        assert db.session.scalars(sa.select(ApiKey.last_used_at)).one() is not None


@pytest.mark.postgres
def test_concurrent_rotations_of_one_key_replace_it_once(app, client, owner_headers):
    """Ten simultaneous rotations: one new key, nine 404s, the old key dead."""
    old = _issue(client, owner_headers, test=True)

    def rotate(_):
        with app.test_client() as own_client:
            response = own_client.post(f"/v1/api-keys/{old['id']}/rotate", headers=owner_headers)
            return response.status_code, response.get_json()

    with ThreadPoolExecutor(max_workers=10) as pool:
        results = list(pool.map(rotate, range(10)))
    created = [body for status, body in results if status == 201]
    assert len(created) == 1
    assert sorted(status for status, _ in results) == [201] + [404] * 9
    listing = client.get("/v1/api-keys", headers=owner_headers).json["data"]
    assert [k["id"] for k in listing] == [created[0]["id"]]
    assert _whoami(client, old["apiKey"]).status_code == 401


def test_test_flag_must_be_a_real_boolean(client, owner_headers):
    for value in ("yes", 1, "true"):
        response = client.post("/v1/api-keys", headers=owner_headers, json={"test": value})
        assert_error(response, 400, "invalid_request_error", "invalid_request", param="test")


def test_a_body_that_is_not_an_object_is_named_body(client, owner_headers):
    response = client.post("/v1/api-keys", headers=owner_headers, json=["label"])
    error = assert_error(response, 400, "invalid_request_error", "invalid_request", param="body")
    assert error["details"][0]["param"] == "body"


def test_label_limit_holds_for_every_caller_of_the_service(app, owner):
    from app.errors import InvalidRequest
    from app.models import KeyMode
    from app.services import api_keys

    with app.app_context(), pytest.raises(InvalidRequest) as refused:
        api_keys.issue_for_account(owner.account_id, label="x" * 65, mode=KeyMode.TEST)
    assert refused.value.param == "label"
