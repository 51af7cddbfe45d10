"""Passwords (issue 10): Argon2id, at least 10 characters, and a hash made with outdated
parameters is upgraded at the next successful sign-in (never at a failed one)."""

import pytest
from argon2 import PasswordHasher

from app.errors import InvalidRequest
from app.extensions import db
from app.models import User
from app.services import accounts
from tests.support.http import assert_error

WEAK_HASHER = PasswordHasher(time_cost=1, memory_cost=1024, parallelism=1)


def _stored_hash(app, user_id: str) -> str:
    with app.app_context():
        return db.session.get(User, user_id).password_hash


def _set_hash(app, user_id: str, password_hash: str) -> None:
    with app.app_context():
        db.session.get(User, user_id).password_hash = password_hash
        db.session.commit()


def test_passwords_need_ten_characters_and_are_stored_as_argon2id(app):
    with app.app_context():
        with pytest.raises(InvalidRequest, match="at least 10 characters") as refused:
            accounts.add_user("short@merchant.example.com", "nine-char")
        assert refused.value.param == "password"
        user = accounts.add_user("long@merchant.example.com", "ten-chars!")
        assert user.password_hash.startswith("$argon2id$")
        assert "ten-chars!" not in user.password_hash
        db.session.rollback()


def test_an_outdated_hash_is_upgraded_at_the_next_successful_login(app, client, owner):
    _set_hash(app, owner.user_id, WEAK_HASHER.hash(owner.password))

    failed = client.post("/v1/auth/login", json={"email": owner.email, "password": "x" * 12})
    assert_error(failed, 401, "authentication_error", "unauthorized")
    assert "m=1024,t=1,p=1" in _stored_hash(app, owner.user_id)  # a failure changes nothing

    response = client.post(
        "/v1/auth/login", json={"email": owner.email, "password": owner.password}
    )
    assert response.status_code == 200
    upgraded = _stored_hash(app, owner.user_id)
    assert "m=1024,t=1,p=1" not in upgraded
    assert not PasswordHasher().check_needs_rehash(upgraded)
    PasswordHasher().verify(upgraded, owner.password)
