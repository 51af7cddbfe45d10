"""The API Pix client under throttling (429, 503): the PSP's `Retry-After` is waited out
inside the call when it is short, our own jittered backoff when it sends none, and a longer
wait is handed to the caller as `ApiPixUnavailable.retry_after`. Sleeps are recorded, never
slept."""

import json
import logging
from datetime import timedelta

import pytest
import requests

from app.providers.api_pix import ApiPixClient, ApiPixSettings, ApiPixUnavailable, problems
from app.providers.api_pix.mapping import cob_body, txid_for
from tests.support.fake_api_pix import CLIENT_TIMEOUT_SECONDS, RECEIVER_KEY

TXID = txid_for("0b0e5f4e-8f0a-4c55-9a8e-3f1d2a6b7c8d")


def body() -> dict:
    return cob_body(1234, 3600, None, None, receiver_key=RECEIVER_KEY)


@pytest.fixture
def sleeps() -> list[float]:
    return []


def client_for(psp, clock, sleeps, session=None, **settings) -> ApiPixClient:
    config = psp.config(API_PIX_TIMEOUT_SECONDS=CLIENT_TIMEOUT_SECONDS, **settings)
    return ApiPixClient(
        ApiPixSettings.from_config(config), session=session, clock=clock, sleep=sleeps.append
    )


@pytest.fixture
def client(psp, clock, sleeps):
    """The API Pix client with the defaults (2 retries, 2 s at most) and a recording sleep."""
    return client_for(psp, clock, sleeps)


# Retry-After


@pytest.mark.parametrize("status", [429, 503])
def test_a_short_retry_after_is_waited_out_and_the_call_succeeds(psp, client, sleeps, status):
    psp.fail_next(status, retry_after="1")

    cob = client.put_cob(TXID, body())

    assert cob["txid"] == TXID
    assert sleeps == [1.0]
    assert len(psp.calls("PUT", "/cob/")) == 2


def test_a_retry_after_equal_to_the_bound_is_still_waited_out(psp, client, sleeps):
    psp.fail_next(429, retry_after="2")

    client.put_cob(TXID, body())

    assert sleeps == [2.0]


@pytest.mark.parametrize("status", [429, 503])
def test_a_longer_retry_after_is_left_to_the_caller(psp, client, sleeps, status, caplog):
    psp.fail_next(status, retry_after="30")

    with pytest.raises(ApiPixUnavailable) as unavailable:
        client.put_cob(TXID, body())

    assert unavailable.value.status == status
    assert unavailable.value.retry_after == timedelta(seconds=30)
    assert sleeps == []
    assert len(psp.calls("PUT", "/cob/")) == 1
    assert psp.cobs == {}
    (logged,) = [record for record in caplog.records if record.levelno == logging.WARNING]
    assert logged.status == status and logged.retry_after_seconds == 30


def test_an_http_date_retry_after_is_read(psp, client, sleeps):
    psp.fail_next(503, retry_after="Wed, 21 Oct 2099 07:28:00 GMT")

    with pytest.raises(ApiPixUnavailable) as unavailable:
        client.put_cob(TXID, body())

    assert unavailable.value.retry_after == problems.MAX_RETRY_AFTER
    assert sleeps == []


# Our own backoff


def test_without_retry_after_the_client_backs_off_with_jitter(psp, client, sleeps):
    psp.fail_next(503, retry_after=None)
    psp.fail_next(503, retry_after=None)

    assert client.put_cob(TXID, body())["txid"] == TXID

    first, second = sleeps
    assert 0.45 <= first <= 0.55  # RETRY_BASE ± 10 %
    assert 0.9 <= second <= 1.1  # doubled
    assert len(psp.calls("PUT", "/cob/")) == 3


def test_our_backoff_never_exceeds_the_bound(psp, clock, sleeps):
    client = client_for(
        psp, clock, sleeps, API_PIX_MAX_RETRIES="4", API_PIX_MAX_RETRY_WAIT_SECONDS="0.7"
    )
    for _ in range(4):
        psp.fail_next(429, retry_after=None)

    client.put_cob(TXID, body())

    assert len(sleeps) == 4
    assert 0.45 <= sleeps[0] <= 0.55
    assert all(0.63 <= wait <= 0.7 for wait in sleeps[1:])  # capped, then jittered below


def test_a_throttled_answer_without_retry_after_has_none_for_the_caller(psp, client, sleeps):
    for _ in range(3):
        psp.fail_next(503, retry_after=None)

    with pytest.raises(ApiPixUnavailable) as unavailable:
        client.put_cob(TXID, body())

    assert unavailable.value.retry_after is None
    assert len(sleeps) == 2


# How many times


def test_max_retries_is_respected(psp, client, sleeps):
    for _ in range(3):
        psp.fail_next(429, retry_after="0")

    with pytest.raises(ApiPixUnavailable) as unavailable:
        client.put_cob(TXID, body())

    assert sleeps == [0.0, 0.0]
    assert len(psp.calls("PUT", "/cob/")) == 3
    assert unavailable.value.retry_after == timedelta(0)
    assert client.put_cob(TXID, body())["txid"] == TXID  # the failures are used up


def test_no_retries_when_set_to_zero(psp, clock, sleeps):
    client = client_for(psp, clock, sleeps, API_PIX_MAX_RETRIES="0")
    psp.fail_next(429, retry_after="0")

    with pytest.raises(ApiPixUnavailable):
        client.put_cob(TXID, body())

    assert sleeps == []


@pytest.mark.parametrize("status", [500, 504, 408])
def test_other_outages_are_not_retried_inside_the_call(psp, client, sleeps, status):
    psp.fail_next(status)

    with pytest.raises(ApiPixUnavailable) as unavailable:
        client.put_cob(TXID, body())

    assert unavailable.value.retry_after is None
    assert sleeps == []
    assert len(psp.calls("PUT", "/cob/")) == 1


def test_timeouts_are_not_retried_inside_the_call(psp, client, sleeps):
    psp.fail_next("timeout")

    with pytest.raises(ApiPixUnavailable) as unavailable:
        client.put_cob(TXID, body())

    assert unavailable.value.code == "timeout" and unavailable.value.status is None
    assert sleeps == []


def test_a_401_still_fetches_a_new_token_once_without_waiting(psp, client, sleeps):
    client.put_cob(TXID, body())
    psp.revoke_tokens()

    assert client.get_cob(TXID)["txid"] == TXID
    assert psp.tokens_issued == 2
    assert sleeps == []


# The token endpoint


class ThrottledTokenEndpoint(requests.Session):
    """A session whose first `throttled` token requests get `status` with `headers`, as a
    PSP's OAuth2 server under load answers; the rest reach the fake PSP."""

    def __init__(self, throttled: int, status: int = 429, headers: dict | None = None):
        super().__init__()
        self.throttled, self.status, self.headers_sent = throttled, status, headers or {}

    def post(self, url, **kwargs):
        if self.throttled:
            self.throttled -= 1
            answer = requests.Response()
            answer.status_code = self.status
            answer.headers.update({"Content-Type": "application/json", **self.headers_sent})
            answer._content = json.dumps({"error": "slow_down"}).encode()
            return answer
        return super().post(url, **kwargs)


def test_a_throttled_token_request_is_waited_out(psp, clock, sleeps, caplog):
    session = ThrottledTokenEndpoint(1, headers={"Retry-After": "1"})
    client = client_for(psp, clock, sleeps, session=session)

    assert client.put_cob(TXID, body())["txid"] == TXID

    assert sleeps == [1.0]
    assert psp.tokens_issued == 1
    assert not [record for record in caplog.records if record.levelno >= logging.ERROR]


@pytest.mark.parametrize("status", [429, 503])
def test_a_token_endpoint_asking_for_longer_is_left_to_the_caller(psp, clock, sleeps, status):
    session = ThrottledTokenEndpoint(1, status, headers={"Retry-After": "120"})
    client = client_for(psp, clock, sleeps, session=session)

    with pytest.raises(ApiPixUnavailable) as unavailable:
        client.put_cob(TXID, body())

    assert unavailable.value.status == status
    assert unavailable.value.retry_after == timedelta(seconds=120)
    assert sleeps == []
    assert psp.calls("PUT", "/cob/") == []


def test_a_token_endpoint_throttling_without_retry_after_backs_off(psp, clock, sleeps):
    client = client_for(psp, clock, sleeps, session=ThrottledTokenEndpoint(2, 503))

    assert client.put_cob(TXID, body())["txid"] == TXID

    assert len(sleeps) == 2 and all(0.45 <= wait <= 1.1 for wait in sleeps)


# Settings


def test_the_retry_settings_default_to_two_retries_within_two_seconds(psp):
    settings = ApiPixSettings.from_config(psp.config())

    assert (settings.max_retries, settings.max_retry_wait_seconds) == (2, 2.0)
    blank = psp.config(API_PIX_MAX_RETRIES="", API_PIX_MAX_RETRY_WAIT_SECONDS="")
    assert ApiPixSettings.from_config(blank) == settings


def test_the_retry_settings_are_read(psp):
    settings = ApiPixSettings.from_config(
        psp.config(API_PIX_MAX_RETRIES=5, API_PIX_MAX_RETRY_WAIT_SECONDS="0.25")
    )

    assert (settings.max_retries, settings.max_retry_wait_seconds) == (5, 0.25)


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"API_PIX_MAX_RETRIES": "two"}, "API_PIX_MAX_RETRIES is not a whole number"),
        ({"API_PIX_MAX_RETRIES": "1.5"}, "API_PIX_MAX_RETRIES is not a whole number"),
        ({"API_PIX_MAX_RETRIES": "-1"}, "API_PIX_MAX_RETRIES must be a non-negative whole"),
        ({"API_PIX_MAX_RETRY_WAIT_SECONDS": "soon"}, "WAIT_SECONDS is not a number"),
        ({"API_PIX_MAX_RETRY_WAIT_SECONDS": "-0.5"}, "WAIT_SECONDS must be a non-negative number"),
        ({"API_PIX_MAX_RETRY_WAIT_SECONDS": "inf"}, "WAIT_SECONDS must be a non-negative number"),
    ],
)
def test_bad_retry_settings_say_which_key(psp, overrides, message):
    with pytest.raises(ValueError, match=message):
        ApiPixSettings.from_config(psp.config(**overrides))
