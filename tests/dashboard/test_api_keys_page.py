"""The API keys page: issue (shown once), rotate, revoke; MEMBERs can look but not act."""

import re

from app.models import ApiKey, Role
from tests.support import factories
from tests.support.dashboard import post_form, sign_in
from tests.support.http import count_rows

PAGE = "/dashboard/api-keys"


def _shown_key(html: str) -> str:
    match = re.search(r'value="(ak_(?:live|test)_[A-Za-z0-9_-]{32})"', html)
    assert match, "no key shown"
    return match.group(1)


def test_owner_issues_a_key_that_is_shown_once_and_works(client, owner):
    sign_in(client, owner)
    response = post_form(client, PAGE, PAGE, {"label": "loja virtual", "test": "y"})
    assert response.status_code == 201
    key = _shown_key(response.get_data(as_text=True))
    assert key.startswith("ak_test_")
    listing = client.get(PAGE).get_data(as_text=True)
    assert key not in listing
    assert key[:12] in listing and "loja virtual" in listing
    assert (
        client.get("/v1/test-probe/whoami", headers={"apikey": key}).json["accountId"]
        == owner.account_id
    )


def test_unchecked_test_box_issues_a_live_key(client, owner):
    sign_in(client, owner)
    key = _shown_key(post_form(client, PAGE, PAGE, {"label": "prod"}).get_data(as_text=True))
    assert key.startswith("ak_live_")


def test_rotate_shows_the_new_key_and_kills_the_old(app, client, owner):
    old_key = factories.make_api_key(app, owner.account_id)
    sign_in(client, owner)
    key_id = re.search(
        r"/dashboard/api-keys/([0-9a-f-]{36})/rotate", client.get(PAGE).get_data(as_text=True)
    ).group(1)
    response = post_form(client, PAGE, f"{PAGE}/{key_id}/rotate")
    assert response.status_code == 201
    new_key = _shown_key(response.get_data(as_text=True))
    assert client.get("/v1/test-probe/whoami", headers={"apikey": old_key}).status_code == 401
    assert client.get("/v1/test-probe/whoami", headers={"apikey": new_key}).status_code == 200


def test_revoke_removes_the_key(app, client, owner):
    key = factories.make_api_key(app, owner.account_id)
    sign_in(client, owner)
    key_id = re.search(
        r"/dashboard/api-keys/([0-9a-f-]{36})/revoke", client.get(PAGE).get_data(as_text=True)
    ).group(1)
    response = post_form(client, PAGE, f"{PAGE}/{key_id}/revoke")
    assert response.status_code == 302
    page = client.get(PAGE).get_data(as_text=True)
    assert "revoked" in page and "No active keys" in page
    assert client.get("/v1/test-probe/whoami", headers={"apikey": key}).status_code == 401


def test_member_sees_no_buttons_and_cannot_act_by_posting(app, client, owner):
    """Can a MEMBER issue, rotate or revoke by posting the form directly? (No: 403.)"""
    key = factories.make_api_key(app, owner.account_id)
    member = factories.make_member(app, owner.account_id, Role.MEMBER)
    sign_in(client, member)
    html = client.get(PAGE).get_data(as_text=True)
    assert "Issue key" not in html and "/rotate" not in html and "/revoke" not in html
    assert key[:12] in html
    with client.application.app_context():
        from app.extensions import db

        key_id = db.session.query(ApiKey.id).scalar()
    before = count_rows(app, ApiKey)
    for action in (PAGE, f"{PAGE}/{key_id}/rotate", f"{PAGE}/{key_id}/revoke"):
        response = post_form(client, PAGE, action, {"label": "sneaky"})
        assert response.status_code == 403
        assert "OWNER or ADMIN" in response.get_data(as_text=True)
    assert count_rows(app, ApiKey) == before
    assert client.get("/v1/test-probe/whoami", headers={"apikey": key}).status_code == 200


def test_another_accounts_key_cannot_be_revoked_from_the_page(app, client, owner):
    foreign = factories.make_account(app, "Alheia")
    foreign_key = factories.make_api_key(app, foreign)
    with app.app_context():
        from app.extensions import db

        foreign_id = db.session.query(ApiKey.id).scalar()
    sign_in(client, owner)
    response = post_form(client, PAGE, f"{PAGE}/{foreign_id}/revoke")
    assert response.status_code == 404
    assert client.get("/v1/test-probe/whoami", headers={"apikey": foreign_key}).status_code == 200


def test_label_too_long_is_refused(client, owner):
    sign_in(client, owner)
    response = post_form(client, PAGE, PAGE, {"label": "x" * 65})
    assert response.status_code == 400
    assert "Label" in response.get_data(as_text=True)


def test_empty_state_tells_what_to_do(client, owner):
    sign_in(client, owner)
    assert "Issue a test key above" in client.get(PAGE).get_data(as_text=True)
