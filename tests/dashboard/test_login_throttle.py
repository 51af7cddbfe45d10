"""Dashboard sign-in throttling: repeated failures lock the e-mail (and, beyond a higher limit,
the address) for a while, whatever the password, without revealing whether the e-mail exists;
a Redis outage never stops people signing in."""

import logging

import pytest
from redis import Redis

from tests.support import factories
from tests.support.http import csrf_token

LOCKED = "Too many sign-in attempts. Try again in 15 minutes."
REFUSED = "Invalid e-mail or password."
ATTACKER_IP = "203.0.113.7"


@pytest.fixture(autouse=True)
def _fresh_counters(redis):
    """Failure counts start at zero and do not leak into other tests."""


def _attempt(app, email: str, password: str, ip: str = ATTACKER_IP):
    """One sign-in from `ip` in a browser of its own (no session to carry over)."""
    client = app.test_client()
    environ = {"REMOTE_ADDR": ip}
    page = client.get("/dashboard/login", environ_base=environ)
    return client.post(
        "/dashboard/login",
        data={"email": email, "password": password, "csrf_token": csrf_token(page.text)},
        environ_base=environ,
    )


def _fail(app, email: str, times: int, ip: str = ATTACKER_IP) -> None:
    for _ in range(times):
        assert _attempt(app, email, "wrong-password", ip).status_code == 401


def test_five_failures_lock_the_email_even_for_the_right_password(app, owner):
    _fail(app, owner.email, 4)
    _fail(app, f"  {owner.email.upper()} ", 1)  # normalised as sign-in normalises it

    locked = _attempt(app, owner.email, owner.password)
    assert locked.status_code == 429
    assert LOCKED in locked.text
    assert REFUSED not in locked.text
    assert 0 < int(locked.headers["Retry-After"]) <= 900
    assert 'name="csrf_token"' in locked.text  # the form is shown again


def test_a_success_before_the_limit_starts_the_count_again(app, owner):
    _fail(app, owner.email, 4)
    assert _attempt(app, owner.email, owner.password).status_code == 302
    _fail(app, owner.email, 4)
    assert _attempt(app, owner.email, owner.password).status_code == 302


def test_another_email_is_unaffected_until_the_address_limit(app, owner, monkeypatch):
    monkeypatch.setitem(app.config, "LOGIN_MAX_FAILURES_PER_IP", 10)
    other = factories.make_member(app)
    _fail(app, owner.email, 5)
    assert _attempt(app, owner.email, owner.password).status_code == 429
    assert _attempt(app, other.email, other.password).status_code == 302

    _fail(app, "guess@merchant.example.com", 5)  # 10 failures from the address in all
    from_attacker = _attempt(app, other.email, other.password)
    assert from_attacker.status_code == 429
    assert LOCKED in from_attacker.text
    assert _attempt(app, other.email, other.password, ip="198.51.100.20").status_code == 302


def test_an_unknown_email_is_locked_in_the_same_words(app, owner):
    _fail(app, owner.email, 5)
    _fail(app, "ghost@merchant.example.com", 5)
    known = _attempt(app, owner.email, "wrong-password")
    unknown = _attempt(app, "ghost@merchant.example.com", "wrong-password")
    for response in (known, unknown):
        assert response.status_code == 429
        assert LOCKED in response.text
        assert response.headers["Retry-After"]


def test_sign_in_works_while_redis_is_down(app, owner, monkeypatch, caplog):
    unreachable = Redis.from_url("redis://127.0.0.1:1/0", socket_connect_timeout=1)
    monkeypatch.setitem(app.extensions, "acme_redis", unreachable)
    with caplog.at_level(logging.WARNING, logger="app.services.login_throttle"):
        _fail(app, owner.email, 6)
        assert _attempt(app, owner.email, owner.password).status_code == 302
    assert any("login throttle unavailable" in r.message for r in caplog.records)
