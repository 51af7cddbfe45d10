"""Dashboard JWT: login, claims, account choice, expiry, logout, tampering."""

import jwt
import pytest

from app.models import Membership, Role
from tests.support import factories
from tests.support.http import assert_error, bearer, login, token_claims


def _decode(token: str) -> dict:
    return jwt.decode(token, options={"verify_signature": False})


def test_login_returns_a_token_with_the_documentedtoken_claims(client, owner):
    """Does login answer a bearer token carrying sub, account, role, jti, iat and exp?"""
    response = client.post(
        "/v1/auth/login", json={"email": owner.email, "password": owner.password}
    )
    assert response.status_code == 200
    body = response.json
    assert body["tokenType"] == "Bearer"
    assert body["account"]["id"] == owner.account_id
    assert body["user"]["email"] == owner.email
    assert body["role"] == "OWNER"
    assert 3500 <= body["expiresIn"] <= 3600
    claims = _decode(body["token"])
    assert set(claims) == {"sub", "account", "role", "jti", "iat", "exp"}
    assert claims["sub"] == owner.user_id
    assert claims["account"] == owner.account_id
    assert claims["exp"] - claims["iat"] == 3600
    assert jwt.get_unverified_header(body["token"])["alg"] == "HS256"


def test_login_email_is_case_insensitive(client, owner):
    response = client.post(
        "/v1/auth/login", json={"email": owner.email.upper(), "password": owner.password}
    )
    assert response.status_code == 200


def test_wrong_password_and_unknown_email_fail_alike(client, owner):
    """Does a failed login reveal whether the e-mail exists? (It must not.)"""
    wrong = client.post("/v1/auth/login", json={"email": owner.email, "password": "nope-nope-nope"})
    unknown = client.post(
        "/v1/auth/login", json={"email": "ghost@merchant.example.com", "password": "nope-nope-nope"}
    )
    malformed = client.post("/v1/auth/login", json={"email": "not-an-email", "password": "x"})
    messages = set()
    for response in (wrong, unknown, malformed):
        messages.add(assert_error(response, 401, "authentication_error", "unauthorized")["message"])
    assert len(messages) == 1


def test_login_validation_lists_each_missing_field(client):
    error = assert_error(
        client.post("/v1/auth/login", json={}), 400, "invalid_request_error", "invalid_request"
    )
    assert {d["param"] for d in error["details"]} == {"email", "password"}


def test_user_in_several_accounts_must_choose_one(app, client, owner):
    """A user in several accounts picks one at login; the token is scoped to it."""
    other_account = factories.make_account(app, "Segunda Loja")
    factories.make_member(app, other_account, Role.MEMBER, email=owner.email)
    body = {"email": owner.email, "password": owner.password}
    error = assert_error(
        client.post("/v1/auth/login", json=body),
        400,
        "invalid_request_error",
        "account_selection_required",
        param="accountId",
    )
    assert {d["message"].split(" ")[0] for d in error["details"]} == {
        owner.account_id,
        other_account,
    }
    token = login(client, owner, account_id=other_account)
    assert _decode(token)["account"] == other_account
    assert _decode(token)["role"] == "MEMBER"


def test_choosing_an_account_one_does_not_belong_to_fails(app, client, owner):
    stranger_account = factories.make_account(app, "Outra")
    response = client.post(
        "/v1/auth/login",
        json={"email": owner.email, "password": owner.password, "accountId": stranger_account},
    )
    assert_error(response, 401, "authentication_error", "unauthorized")


def test_logout_ends_the_token_at_once(client, owner):
    token = login(client, owner)
    assert client.get("/v1/api-keys", headers=bearer(token)).status_code == 200
    response = client.post("/v1/auth/logout", headers=bearer(token))
    assert response.status_code == 204
    assert response.data == b""
    assert_error(
        client.get("/v1/api-keys", headers=bearer(token)),
        401,
        "authentication_error",
        "unauthorized",
    )
    other_session = login(client, owner)
    assert client.get("/v1/api-keys", headers=bearer(other_session)).status_code == 200


def test_logout_needs_a_token(client):
    assert_error(client.post("/v1/auth/logout"), 401, "authentication_error", "unauthorized")


def test_expired_token_is_refused(app, client, owner):
    app.config["JWT_LIFETIME_SECONDS"] = -5
    try:
        token = login(client, owner)
    finally:
        app.config["JWT_LIFETIME_SECONDS"] = 3600
    error = assert_error(
        client.get("/v1/api-keys", headers=bearer(token)),
        401,
        "authentication_error",
        "unauthorized",
    )
    assert "expired" in error["message"]


def _forge(app, claims: dict, algorithm: str = "HS256", key: str | None = None) -> str:
    return jwt.encode(claims, key or app.config["JWT_SECRET"], algorithm=algorithm)


@pytest.mark.filterwarnings("ignore::jwt.warnings.InsecureKeyLengthWarning")
def test_tampered_unsigned_or_incomplete_tokens_are_refused(app, client, owner):
    """Algorithm pinned, signature checked, exp required."""
    forged = [
        _forge(app, token_claims(owner), key="another-secret-entirely-32-bytes!!"),
        jwt.encode(token_claims(owner), None, algorithm="none"),
        _forge(app, token_claims(owner, exp=None)),
        _forge(app, token_claims(owner, jti=None)),
        _forge(app, token_claims(owner), algorithm="HS512"),
        "not-a-jwt",
    ]
    for token in forged:
        assert_error(
            client.get("/v1/api-keys", headers=bearer(token)),
            401,
            "authentication_error",
            "unauthorized",
        )
    assert (
        client.get("/v1/api-keys", headers=bearer(_forge(app, token_claims(owner)))).status_code
        == 200
    )


def test_removed_member_loses_access_with_a_live_token(app, client, owner):
    """Membership is checked on every request, not only at login."""
    token = login(client, owner)
    with app.app_context():
        from app.extensions import db

        membership = db.session.query(Membership).filter_by(user_id=owner.user_id).one()
        membership.active = False
        db.session.commit()
    assert_error(
        client.get("/v1/api-keys", headers=bearer(token)),
        401,
        "authentication_error",
        "unauthorized",
    )


def test_api_key_is_not_accepted_on_jwt_routes(app, client, owner):
    key = factories.make_api_key(app, owner.account_id)
    assert_error(
        client.get("/v1/api-keys", headers={"apikey": key}),
        401,
        "authentication_error",
        "unauthorized",
    )
    assert_error(
        client.get("/v1/api-keys", headers={"Authorization": f"Bearer {key}"}),
        401,
        "authentication_error",
        "unauthorized",
    )


def test_staff_without_an_account_get_a_staff_token_that_opens_no_merchant_route(app, client):
    """Can platform staff log in to the API, and is that token useless on merchant routes?"""
    staff = factories.make_staff(app)
    body = client.post(
        "/v1/auth/login", json={"email": staff.email, "password": staff.password}
    ).get_json()
    assert body["role"] == "STAFF"
    assert body["account"] is None
    assert body["user"]["email"] == staff.email
    assert _decode(body["token"])["account"] == "platform"
    response = client.get("/v1/api-keys", headers=bearer(body["token"]))
    assert_error(response, 401, "authentication_error", "unauthorized")
