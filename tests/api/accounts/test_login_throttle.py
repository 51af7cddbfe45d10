"""API login throttling (`POST /v1/auth/login`): repeated failures answer 429 `rate_limited`
with `Retry-After`, whatever the password and whether or not the e-mail exists; a Redis outage
never stops logins."""

import logging
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
from redis import Redis

from app import trust_proxies
from app.config import load_settings
from app.settings_checks import validate_settings
from tests.support import factories
from tests.support.http import assert_error

ATTACKER_IP = "203.0.113.7"


@pytest.fixture(autouse=True)
def _fresh_counters(redis):
    """Failure counts start at zero and do not leak into other tests."""


def _login(client, email: str, password: str, ip: str = ATTACKER_IP):
    return client.post(
        "/v1/auth/login",
        json={"email": email, "password": password},
        environ_base={"REMOTE_ADDR": ip},
    )


def _fail(client, email: str, times: int, ip: str = ATTACKER_IP) -> None:
    for _ in range(times):
        assert_error(
            _login(client, email, "wrong-password", ip), 401, "authentication_error", "unauthorized"
        )


def _assert_locked(response) -> dict:
    error = assert_error(response, 429, "rate_limit_error", "rate_limited")
    assert 0 < int(response.headers["Retry-After"]) <= 900
    return error


def test_five_failures_lock_the_email_even_for_the_right_password(client, owner):
    _fail(client, owner.email, 5)
    error = _assert_locked(_login(client, owner.email.upper(), owner.password))
    assert error["message"] == "Too many sign-in attempts. Try again in 15 minutes."


def test_a_success_before_the_limit_starts_the_count_again(client, owner):
    _fail(client, owner.email, 4)
    assert _login(client, owner.email, owner.password).status_code == 200
    _fail(client, owner.email, 4)
    assert _login(client, owner.email, owner.password).status_code == 200


def test_another_email_is_unaffected_until_the_address_limit(app, client, owner, monkeypatch):
    monkeypatch.setitem(app.config, "LOGIN_MAX_FAILURES_PER_IP", 10)
    other = factories.make_member(app)
    _fail(client, owner.email, 5)
    _assert_locked(_login(client, owner.email, owner.password))
    assert _login(client, other.email, other.password).status_code == 200

    _fail(client, "guess@merchant.example.com", 5)  # 10 failures from the address in all
    _assert_locked(_login(client, other.email, other.password))
    assert _login(client, other.email, other.password, ip="198.51.100.20").status_code == 200


def test_an_unknown_email_is_locked_in_the_same_words(client, owner):
    """Known, unknown and malformed e-mails lock after the same count, in the same words."""
    errors = []
    for email in (owner.email, "ghost@merchant.example.com", "not-an-email"):
        _fail(client, email, 5)
        errors.append(_assert_locked(_login(client, email, "wrong-password")))
    assert errors[0] == errors[1] == errors[2]


def test_a_lock_ends_when_the_window_passes(app, client, owner, redis, monkeypatch):
    monkeypatch.setitem(app.config, "LOGIN_FAILURE_WINDOW_SECONDS", 60)
    _fail(client, owner.email, 5)
    locked = _login(client, owner.email, owner.password)
    assert_error(locked, 429, "rate_limit_error", "rate_limited")
    assert 0 < int(locked.headers["Retry-After"]) <= 60
    assert locked.json["error"]["message"].endswith("Try again in 1 minute.")
    for key in redis.scan_iter("login_failures:*"):  # the window runs out now
        redis.pexpire(key, 50)
    time.sleep(0.2)
    assert _login(client, owner.email, owner.password).status_code == 200


def test_login_works_while_redis_is_down(app, client, owner, monkeypatch, caplog):
    unreachable = Redis.from_url("redis://127.0.0.1:1/0", socket_connect_timeout=1)
    monkeypatch.setitem(app.extensions, "acme_redis", unreachable)
    with caplog.at_level(logging.WARNING, logger="app.services.login_throttle"):
        _fail(client, owner.email, 6)
        assert _login(client, owner.email, owner.password).status_code == 200
    assert any("login throttle unavailable" in r.message for r in caplog.records)


@pytest.mark.parametrize(
    "setting", ["LOGIN_MAX_FAILURES", "LOGIN_FAILURE_WINDOW_SECONDS", "LOGIN_MAX_FAILURES_PER_IP"]
)
def test_settings_that_would_switch_the_lock_off_are_refused(setting):
    with pytest.raises(RuntimeError, match=setting):
        validate_settings({**load_settings(), "APP_ENV": "testing", setting: -1})


def _fail_forwarded(client, email: str, forwarded_for: str, times: int) -> None:
    """Failures that reach us through a proxy at ATTACKER_IP, forwarding for `forwarded_for`."""
    for _ in range(times):
        response = client.post(
            "/v1/auth/login",
            json={"email": email, "password": "wrong-password"},
            environ_base={"REMOTE_ADDR": ATTACKER_IP},
            headers={"X-Forwarded-For": forwarded_for},
        )
        assert response.status_code == 401


def test_behind_trusted_proxies_each_forwarded_client_is_counted_apart(
    app, client, owner, monkeypatch
):
    monkeypatch.setitem(app.config, "TRUSTED_PROXY_HOPS", 1)
    monkeypatch.setitem(app.config, "LOGIN_MAX_FAILURES_PER_IP", 3)
    monkeypatch.setattr(app, "wsgi_app", app.wsgi_app)  # put back after the test
    trust_proxies(app)
    _fail_forwarded(client, "one@merchant.example.com", "198.51.100.1", 2)
    _fail_forwarded(client, "two@merchant.example.com", "198.51.100.2", 2)
    signed_in = client.post(
        "/v1/auth/login",
        json={"email": owner.email, "password": owner.password},
        environ_base={"REMOTE_ADDR": ATTACKER_IP},
        headers={"X-Forwarded-For": "198.51.100.3"},
    )
    assert signed_in.status_code == 200  # the proxy's own address counted nothing


def test_without_trusted_proxies_a_forwarded_address_is_ignored(app, client, monkeypatch):
    monkeypatch.setitem(app.config, "LOGIN_MAX_FAILURES_PER_IP", 3)
    _fail_forwarded(client, "one@merchant.example.com", "198.51.100.1", 2)
    _fail_forwarded(client, "two@merchant.example.com", "198.51.100.2", 1)
    _assert_locked(_login(client, "three@merchant.example.com", "any"))  # one address: ours


def test_parallel_guesses_cannot_pass_the_limit(app, owner):
    """Each attempt is counted before its password is checked, so twelve guesses at once get
    five answers of 'wrong password' at most; the rest are refused unchecked."""

    def guess(_):
        return _login(app.test_client(), owner.email, "wrong-password").status_code

    with ThreadPoolExecutor(max_workers=12) as pool:
        statuses = list(pool.map(guess, range(12)))
    assert statuses.count(401) <= 5
    assert statuses.count(429) >= 7
    assert set(statuses) <= {401, 429}


def test_an_ipv6_client_counts_by_its_64_block(app, client, monkeypatch):
    monkeypatch.setitem(app.config, "LOGIN_MAX_FAILURES_PER_IP", 3)
    for host in ("1", "2", "3"):
        _fail(client, f"guess{host}@merchant.example.com", 1, ip=f"2001:db8:1:2::{host}")
    _assert_locked(_login(client, "other@merchant.example.com", "any", ip="2001:db8:1:2::ff"))
    _fail(client, "other@merchant.example.com", 1, ip="2001:db8:1:3::1")  # another block
