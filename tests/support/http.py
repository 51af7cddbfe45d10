"""Helpers for talking to the app as a client would, and checking the error envelope."""

import re
from datetime import UTC, datetime, timedelta

import sqlalchemy as sa
from flask.testing import FlaskClient

from app.extensions import db

# The language a test reads pages in unless it asks for another (the app's own default,
# with no Accept-Language, is the account's: Portuguese for a Brazilian account).
READER_LANGUAGE = "en"


class ReaderClient(FlaskClient):
    """The test client, as a browser whose reader asked for English (`READER_LANGUAGE`);
    a request's own Accept-Language header still wins."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.environ_base.setdefault("HTTP_ACCEPT_LANGUAGE", READER_LANGUAGE)


def login(client, member, account_id=None) -> str:
    body = {"email": member.email, "password": member.password}
    if account_id:
        body["accountId"] = account_id
    response = client.post("/v1/auth/login", json=body)
    assert response.status_code == 200, response.json
    return response.json["token"]


def bearer(token: str) -> dict:
    return {"Authorization": f"Bearer {token}"}


def token_claims(member, **overrides) -> dict:
    """A dashboard JWT's claims for `member` as an OWNER, valid for five minutes; an override
    of None leaves that claim out (to forge a token without it)."""
    now = datetime.now(UTC)
    claims = {
        "sub": member.user_id,
        "account": member.account_id,
        "role": "OWNER",
        "jti": "j" * 32,
        "iat": now,
        "exp": now + timedelta(minutes=5),
    } | overrides
    return {name: value for name, value in claims.items() if value is not None}


def assert_error(response, status: int, error_type: str, code: str, param: str | None = None):
    """The contract's envelope, with the request id in the body and the header alike."""
    assert response.status_code == status, response.get_data(as_text=True)
    body = response.get_json()
    assert set(body) == {"error", "request_id"}
    assert body["error"]["type"] == error_type
    assert body["error"]["code"] == code
    assert body["error"]["message"]
    assert body["request_id"] == response.headers["X-Request-Id"]
    if param is not None:
        assert body["error"].get("param") == param
    return body["error"]


def csrf_token(html: str) -> str:
    match = re.search(r'name="csrf_token" type="hidden" value="([^"]+)"', html) or re.search(
        r'name="csrf_token" value="([^"]+)"', html
    )
    assert match, "page has no CSRF token"
    return match.group(1)


def count_rows(app, model) -> int:
    with app.app_context():
        return db.session.scalar(sa.select(sa.func.count()).select_from(model))
