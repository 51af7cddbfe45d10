"""Webhook endpoint URLs are stored and called exactly as given, so none may hold a blank or
a control character (raw, or percent-encoded in the host): `urlsplit` drops tabs and line
breaks, so the host checked was not the URL sent. Live destinations must be public unicast
addresses: multicast, reserved and unallocated ranges are refused like private ones, at
registration and at each delivery."""

import pytest
import sqlalchemy as sa

from app.extensions import db
from app.jobs import webhooks as webhook_jobs
from app.models import KeyMode, WebhookDelivery
from app.services.webhooks import addresses
from tests.support import factories
from tests.support.charges import created
from tests.support.http import assert_error

ENDPOINTS = "/v1/webhooks/endpoints"
BLANK_OR_CONTROL_URLS = [
    "https://hooks.example.com/a\r\nX-Injected: 1",
    "https://hooks.example.com/a\nb",
    "https://hooks.example.com/a\tb",
    "https://hooks.example.com/a b",
    " https://hooks.example.com/hooks",
    "https://hooks.example.com/hooks ",
    "https://hooks.exa\tmple.com/hooks",
    "https://hooks.exa\nmple.com/hooks",
    "https://hooks.example.com\r/hooks",
    "https://hooks.exa%0d%0ample.com/hooks",
    "https://hooks.exa%09mple.com/hooks",
    "https://hooks.exa%20mple.com/hooks",
    "https://hooks.example.com%0a/hooks",
    "https://hooks.example.com/a\x1bb",
    "https://hooks.example.com/a\x7fb",
    "https://hooks.example.com/a\u00a0b",
    "https://hooks.example.com/a\u2028b",
    "https://hooks.exa\u200bmple.com/hooks",
]
NOT_PUBLIC_UNICAST = [
    ("224.0.0.1", "multicast"),
    ("239.255.255.250", "multicast"),
    ("[ff02::1]", "multicast"),
    ("[ff0e::1]", "multicast"),
    ("[fec0::1]", "reserved"),
    ("[4000::1]", "reserved"),
    ("255.255.255.255", "private"),
    ("0.0.0.0", "private"),  # noqa: S104 (a destination refused, not an address bound)
    ("[::]", "private"),
    ("240.0.0.1", "private"),
]


@pytest.fixture
def account_id(app):
    return factories.make_account(app)


@pytest.fixture
def test_key(app, account_id):
    return factories.make_api_key(app, account_id)


@pytest.fixture
def live_key(app, account_id):
    return factories.make_api_key(app, account_id, KeyMode.LIVE)


def _register(client, api_key: str, url: str):
    return client.post(
        ENDPOINTS, json={"url": url, "events": ["charge.created"]}, headers={"apikey": api_key}
    )


@pytest.mark.parametrize("url", BLANK_OR_CONTROL_URLS)
def test_a_url_with_a_blank_or_control_character_is_not_registered(client, test_key, url):
    response = _register(client, test_key, url)
    assert_error(response, 400, "invalid_request_error", "invalid_request", param="url")
    assert client.get(ENDPOINTS, headers={"apikey": test_key}).get_json()["data"] == []


@pytest.mark.parametrize("url", BLANK_OR_CONTROL_URLS)
def test_nor_set_by_patch(client, test_key, url):
    registered = _register(client, test_key, "https://hooks.example.com/hooks")
    endpoint_id = registered.get_json()["id"]

    response = client.patch(
        f"{ENDPOINTS}/{endpoint_id}", json={"url": url}, headers={"apikey": test_key}
    )

    assert_error(response, 400, "invalid_request_error", "invalid_request", param="url")
    (endpoint,) = client.get(ENDPOINTS, headers={"apikey": test_key}).get_json()["data"]
    assert endpoint["url"] == "https://hooks.example.com/hooks"


def test_blanks_percent_encoded_in_the_path_stay_encoded_and_are_accepted(client, test_key):
    url = "https://hooks.example.com/a%20b/c%0Ad?q=%09"
    response = _register(client, test_key, url)
    assert response.status_code == 201, response.get_json()
    assert response.get_json()["url"] == url


@pytest.mark.parametrize(("host", "kind"), NOT_PUBLIC_UNICAST)
def test_live_endpoints_may_not_be_multicast_or_reserved(client, live_key, host, kind):
    response = _register(client, live_key, f"https://{host}/hooks")
    error = assert_error(response, 400, "invalid_request_error", "invalid_request", param="url")
    assert f"resolves to a {kind} address" in error["message"]


@pytest.mark.parametrize(("host", "kind"), NOT_PUBLIC_UNICAST[:6])
def test_nor_patched_to_one(client, live_key, monkeypatch, host, kind):
    monkeypatch.setattr(addresses, "resolve", lambda name: ["93.184.216.34"])
    registered = _register(client, live_key, "https://hooks.example.com/hooks")
    assert registered.status_code == 201, registered.get_json()
    monkeypatch.undo()

    response = client.patch(
        f"{ENDPOINTS}/{registered.get_json()['id']}",
        json={"url": f"https://{host}/hooks"},
        headers={"apikey": live_key},
    )

    error = assert_error(response, 400, "invalid_request_error", "invalid_request", param="url")
    assert f"resolves to a {kind} address" in error["message"]


def test_public_unicast_addresses_are_accepted(client, live_key):
    for url in ("https://93.184.216.34/hooks", "https://[2606:4700:4700::1111]/hooks"):
        response = _register(client, live_key, url)
        assert response.status_code == 201, response.get_json()


def test_a_name_that_turns_multicast_is_not_delivered_to(app, client, test_key, monkeypatch):
    monkeypatch.setitem(app.config, "WEBHOOK_ALLOW_PRIVATE_TEST_URLS", False)
    answers = iter([["93.184.216.34"], ["224.0.0.251"]])
    monkeypatch.setattr(addresses, "resolve", lambda name: next(answers))
    assert _register(client, test_key, "https://hooks.example.com/hooks").status_code == 201
    created(client, test_key)

    with app.app_context():
        webhook_jobs.relay_events()
        delivery_id = db.session.scalar(sa.select(WebhookDelivery.id))
        webhook_jobs.deliver(delivery_id)
        delivery = db.session.get(WebhookDelivery, delivery_id)

    assert delivery.last_error == (
        "The host hooks.example.com resolves to a multicast address (224.0.0.251)."
    )
