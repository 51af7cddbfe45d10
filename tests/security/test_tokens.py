"""Dashboard JWTs (issue 10): HS256 only, `exp` required, and a signing key that rotates
without signing everyone out (JWT_SECRET signs; JWT_PREVIOUS_SECRETS only verify). Checked
through the HTTP surface: every refusal is the 401 envelope."""

import base64
import json
from datetime import UTC, datetime, timedelta

import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import rsa

from tests.support.http import assert_error, bearer, login, token_claims

PROTECTED = "/v1/api-keys"
OLD_KEY = "old-jwt-key-" + "o" * 32
NEW_KEY = "new-jwt-key-" + "n" * 32


def _unsigned(claims: dict, alg: str) -> str:
    """A token with the given `alg` header and an empty signature (PyJWT would refuse to
    write some of these spellings)."""

    def part(value: dict) -> str:
        raw = json.dumps(value, default=lambda moment: int(moment.timestamp())).encode()
        return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()

    return f"{part({'alg': alg, 'typ': 'JWT'})}.{part(claims)}."


def _refused(client, token: str) -> dict:
    return assert_error(
        client.get(PROTECTED, headers=bearer(token)), 401, "authentication_error", "unauthorized"
    )


@pytest.mark.parametrize("alg", ["none", "None", "NONE", "HS256"])
def test_unsigned_tokens_are_refused_whatever_the_alg_header_says(client, owner, alg):
    _refused(client, _unsigned(token_claims(owner), alg))


@pytest.mark.filterwarnings("ignore::jwt.warnings.InsecureKeyLengthWarning")
def test_only_hs256_is_accepted(app, client, owner):
    """HS384/HS512 under our own key and an RS256 token are refused: the algorithm is not
    read from the token."""
    key = app.config["JWT_SECRET"]
    private_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    for token in (
        jwt.encode(token_claims(owner), key, algorithm="HS384"),
        jwt.encode(token_claims(owner), key, algorithm="HS512"),
        jwt.encode(token_claims(owner), private_key, algorithm="RS256"),
    ):
        _refused(client, token)
    assert (
        client.get(PROTECTED, headers=bearer(jwt.encode(token_claims(owner), key))).status_code
        == 200
    )


@pytest.mark.parametrize(
    "claims",
    [{"exp": None}, {"exp": "tomorrow"}, {"iat": None}, {"jti": None}, {"sub": None}],
)
def test_a_token_without_a_valid_expiry_or_identity_is_refused(app, client, owner, claims):
    _refused(client, jwt.encode(token_claims(owner, **claims), app.config["JWT_SECRET"]))


def test_tokens_signed_with_a_previous_key_work_until_it_is_dropped(
    app, client, owner, monkeypatch
):
    """Rotation: new key in JWT_SECRET, old key in JWT_PREVIOUS_SECRETS for a token lifetime."""
    monkeypatch.setitem(app.config, "JWT_SECRET", OLD_KEY)
    issued_before = login(client, owner)

    monkeypatch.setitem(app.config, "JWT_SECRET", NEW_KEY)
    monkeypatch.setitem(app.config, "JWT_PREVIOUS_SECRETS", [OLD_KEY])
    issued_after = login(client, owner)
    jwt.decode(issued_after, NEW_KEY, algorithms=["HS256"])  # new tokens use the new key
    for token in (issued_before, issued_after):
        assert client.get(PROTECTED, headers=bearer(token)).status_code == 200

    monkeypatch.setitem(app.config, "JWT_PREVIOUS_SECRETS", [])
    _refused(client, issued_before)
    assert client.get(PROTECTED, headers=bearer(issued_after)).status_code == 200


def test_a_previous_key_does_not_bring_back_an_expired_or_revoked_token(
    app, client, owner, monkeypatch
):
    monkeypatch.setitem(app.config, "JWT_SECRET", OLD_KEY)
    expired = jwt.encode(token_claims(owner, exp=datetime.now(UTC) - timedelta(seconds=5)), OLD_KEY)
    revoked = login(client, owner)
    assert client.post("/v1/auth/logout", headers=bearer(revoked)).status_code in (200, 204)

    monkeypatch.setitem(app.config, "JWT_SECRET", NEW_KEY)
    monkeypatch.setitem(app.config, "JWT_PREVIOUS_SECRETS", [OLD_KEY])
    assert "expired" in _refused(client, expired)["message"]
    assert "revoked" in _refused(client, revoked)["message"]
