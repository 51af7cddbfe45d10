"""API rate limits per API key and per account: counted in Redis, told in headers, 429 past them."""

import logging

import pytest
from redis import Redis

from app.config import load_settings
from app.settings_checks import validate_settings
from tests.support import factories
from tests.support.http import assert_error

LIMIT = "X-RateLimit-Limit-Minute"
REMAINING = "X-RateLimit-Remaining-Minute"


@pytest.fixture(autouse=True)
def _fresh_counters(redis):
    """Each test starts with empty windows."""


@pytest.fixture
def account_id(app):
    return factories.make_account(app)


@pytest.fixture
def api_key(app, account_id):
    return factories.make_api_key(app, account_id)


def _balance(client, api_key):
    return client.get("/v1/wallets/balance", headers={"apikey": api_key})


def _spend(client, api_key, times: int) -> None:
    for _ in range(times):
        assert _balance(client, api_key).status_code == 200


def test_every_answer_says_the_limit_and_what_is_left(client, api_key):
    first, second = _balance(client, api_key), _balance(client, api_key)
    assert first.status_code == second.status_code == 200
    assert first.headers[LIMIT] == second.headers[LIMIT] == "600"
    assert first.headers[REMAINING] == "599"
    assert second.headers[REMAINING] == "598"


def test_errors_of_a_known_key_carry_the_headers_too(client, api_key):
    response = client.get("/v1/charges/ch_missing", headers={"apikey": api_key})
    assert_error(response, 404, "not_found_error", "not_found")
    assert response.headers[REMAINING] == "599"


def test_past_the_key_limit_requests_are_refused_until_the_minute_ends(
    app, client, api_key, monkeypatch
):
    monkeypatch.setitem(app.config, "API_RATE_LIMIT_PER_MINUTE", 60)
    _spend(client, api_key, 59)
    last_allowed = _balance(client, api_key)
    assert last_allowed.status_code == 200
    assert last_allowed.headers[REMAINING] == "0"

    refused = _balance(client, api_key)
    assert_error(refused, 429, "rate_limit_error", "rate_limited")
    assert 1 <= int(refused.headers["Retry-After"]) <= 60
    assert refused.headers[LIMIT] == "60"
    assert refused.headers[REMAINING] == "0"


def test_the_window_ends_after_its_minute(app, client, api_key, redis, monkeypatch):
    monkeypatch.setitem(app.config, "API_RATE_LIMIT_PER_MINUTE", 1)
    _spend(client, api_key, 1)
    assert _balance(client, api_key).status_code == 429
    for key in redis.scan_iter("api_rate:*"):
        redis.delete(key)  # as if the minute had passed
    assert _balance(client, api_key).status_code == 200


def test_another_key_of_the_account_goes_on_until_the_account_limit(
    app, client, account_id, api_key, monkeypatch
):
    monkeypatch.setitem(app.config, "API_RATE_LIMIT_PER_MINUTE", 3)
    monkeypatch.setitem(app.config, "API_RATE_LIMIT_PER_ACCOUNT_PER_MINUTE", 5)
    other_key = factories.make_api_key(app, account_id)
    _spend(client, api_key, 3)
    assert _balance(client, api_key).status_code == 429  # refused by its key: account untouched

    tightest = _balance(client, other_key)
    assert tightest.status_code == 200
    assert (tightest.headers[LIMIT], tightest.headers[REMAINING]) == ("5", "1")
    _spend(client, other_key, 1)
    refused = _balance(client, other_key)
    assert_error(refused, 429, "rate_limit_error", "rate_limited")
    assert (refused.headers[LIMIT], refused.headers[REMAINING]) == ("5", "0")
    assert "account" in refused.get_json()["error"]["message"]


def test_another_account_is_not_affected(app, client, api_key, monkeypatch):
    monkeypatch.setitem(app.config, "API_RATE_LIMIT_PER_MINUTE", 2)
    monkeypatch.setitem(app.config, "API_RATE_LIMIT_PER_ACCOUNT_PER_MINUTE", 2)
    _spend(client, api_key, 2)
    assert _balance(client, api_key).status_code == 429
    stranger_key = factories.make_api_key(app, factories.make_account(app, "Outra Loja"))
    response = _balance(client, stranger_key)
    assert response.status_code == 200
    assert response.headers[REMAINING] == "1"


def test_requests_go_through_unlimited_while_redis_is_down(
    app, client, api_key, monkeypatch, caplog
):
    monkeypatch.setitem(app.config, "API_RATE_LIMIT_PER_MINUTE", 1)
    unreachable = Redis.from_url("redis://127.0.0.1:1/0", socket_connect_timeout=1)
    monkeypatch.setitem(app.extensions, "acme_redis", unreachable)
    with caplog.at_level(logging.WARNING, logger="app.services.api_rate_limits"):
        responses = [_balance(client, api_key) for _ in range(2)]
    assert [r.status_code for r in responses] == [200, 200]
    assert all(LIMIT not in r.headers and REMAINING not in r.headers for r in responses)
    warnings = [r for r in caplog.records if "rate limits unavailable" in r.message]
    assert len(warnings) == 2  # one a request


def test_dashboard_token_routes_are_not_limited(app, client, owner_headers, monkeypatch):
    monkeypatch.setitem(app.config, "API_RATE_LIMIT_PER_MINUTE", 1)
    monkeypatch.setitem(app.config, "API_RATE_LIMIT_PER_ACCOUNT_PER_MINUTE", 1)
    responses = [client.get("/v1/api-keys", headers=owner_headers) for _ in range(3)]
    assert [r.status_code for r in responses] == [200, 200, 200]
    assert LIMIT not in responses[-1].headers


@pytest.mark.parametrize(
    "setting", ["API_RATE_LIMIT_PER_MINUTE", "API_RATE_LIMIT_PER_ACCOUNT_PER_MINUTE"]
)
def test_a_limit_below_one_is_refused_at_start(setting):
    with pytest.raises(RuntimeError, match=setting):
        validate_settings({**load_settings(), "APP_ENV": "testing", setting: 0})
