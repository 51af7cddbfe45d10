"""One endpoint per URL in an account and mode (issue 21): two endpoints with one URL had every
event delivered twice to the same receiver. Registering or changing to a URL another endpoint
has (active or INACTIVE; a deleted one is gone) is 409 `webhook_endpoint_exists`, naming that
endpoint, and nothing is written. URLs are compared exactly as stored; the unique index makes
a concurrent twin the same 409."""

import itertools
import threading

import pytest

from app.models import KeyMode, WebhookEndpoint
from app.services.webhooks import addresses
from app.services.webhooks import endpoints as webhook_endpoints
from tests.support import factories
from tests.support.http import assert_error, count_rows

ENDPOINTS = "/v1/webhooks/endpoints"
URL = "http://localhost:9000/hooks"


@pytest.fixture
def account_id(app):
    return factories.make_account(app)


@pytest.fixture
def api_key(app, account_id):
    return factories.make_api_key(app, account_id)


def _register(client, api_key: str, url: str = URL, events=("charge.created",)):
    body = {"url": url, "events": list(events)}
    return client.post(ENDPOINTS, json=body, headers={"apikey": api_key})


def _registered(client, api_key: str, url: str = URL) -> str:
    response = _register(client, api_key, url)
    assert response.status_code == 201, response.get_json()
    return response.get_json()["id"]


def _patch(client, api_key: str, endpoint_id: str, changes: dict):
    return client.patch(f"{ENDPOINTS}/{endpoint_id}", json=changes, headers={"apikey": api_key})


def _listed(client, api_key: str) -> list[dict]:
    return client.get(ENDPOINTS, headers={"apikey": api_key}).get_json()["data"]


def _taken(response, twin_id: str) -> str:
    error = assert_error(response, 409, "conflict_error", "webhook_endpoint_exists", param="url")
    assert twin_id in error["message"], error
    return error["message"]


def test_registering_a_url_the_account_has_is_409_naming_its_endpoint(client, api_key):
    first = _registered(client, api_key)
    again = _register(client, api_key, events=("charge.paid", "payment.created"))
    message = _taken(again, first)
    assert message == (
        f"Webhook endpoint {first} already has this URL; each URL has one endpoint per mode, "
        "so change that endpoint's events instead."
    )
    assert [e["id"] for e in _listed(client, api_key)] == [first]


def test_a_disabled_endpoint_keeps_its_url_and_a_deleted_one_frees_it(client, api_key):
    first = _registered(client, api_key)
    assert _patch(client, api_key, first, {"status": "INACTIVE"}).status_code == 200
    assert "(INACTIVE: it can be enabled again)" in _taken(_register(client, api_key), first)

    deleted = client.delete(f"{ENDPOINTS}/{first}", headers={"apikey": api_key})
    assert deleted.status_code == 200
    second = _registered(client, api_key)
    assert [e["id"] for e in _listed(client, api_key)] == [second]


def test_the_same_url_in_another_mode_or_account_and_other_spellings_are_other_endpoints(
    app, client, api_key, account_id, monkeypatch
):
    """Only the stored string counts: nothing is normalised, so a trailing slash or a host in
    capitals is another URL (as the service stores and calls it)."""
    monkeypatch.setattr(addresses, "resolve", lambda name: ["93.184.216.34"])
    public = "https://hooks.example.com/acme"
    _registered(client, api_key, public)
    _registered(client, factories.make_api_key(app, account_id, KeyMode.LIVE), public)
    _registered(client, factories.make_api_key(app, factories.make_account(app, "Other")), public)
    for spelling in (f"{public}/", "https://HOOKS.example.com/acme", f"{public}?a=1"):
        _registered(client, api_key, spelling)
    assert count_rows(app, WebhookEndpoint) == 6


def test_changing_the_url_to_another_endpoints_is_409_and_keeping_its_own_is_not(client, api_key):
    first = _registered(client, api_key)
    second = _registered(client, api_key, "http://localhost:9000/other")
    refused = _patch(client, api_key, second, {"url": URL, "events": ["charge.paid"]})
    _taken(refused, first)
    listed = {e["id"]: e for e in _listed(client, api_key)}
    assert (listed[second]["url"], listed[second]["events"]) == (
        "http://localhost:9000/other",
        ["charge.created"],
    )

    kept = _patch(client, api_key, first, {"url": URL, "events": ["charge.paid"]})
    assert kept.status_code == 200 and kept.get_json()["events"] == ["charge.paid"]


def test_two_registrations_of_one_url_at_once_make_one_endpoint(app, api_key, monkeypatch):
    """Both requests look for a twin before either writes (the barrier), so the second is
    stopped by the unique index when it writes, and still answers the 409 naming the first."""
    look_up = webhook_endpoints._endpoint_with_url
    barrier = threading.Barrier(2, timeout=10)
    first_looks = itertools.count()

    def both_look_first(*args):
        twin = look_up(*args)
        if next(first_looks) < 2:
            barrier.wait()
        return twin

    monkeypatch.setattr(webhook_endpoints, "_endpoint_with_url", both_look_first)
    responses = []

    def register() -> None:
        responses.append(_register(app.test_client(), api_key))

    threads = [threading.Thread(target=register) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)

    made, refused = sorted(responses, key=lambda response: response.status_code)
    assert made.status_code == 201, made.get_json()
    _taken(refused, made.get_json()["id"])
    assert count_rows(app, WebhookEndpoint) == 1


def test_the_document_lists_the_409_where_a_url_is_written(client):
    paths = client.get("/v1/openapi.json").get_json()["paths"]
    for path, method in ((ENDPOINTS, "post"), (f"{ENDPOINTS}/{{endpoint_id}}", "patch")):
        conflict = paths[path][method]["responses"]["409"]
        assert "webhook_endpoint_exists" in conflict["description"]
        assert conflict["content"]["application/json"]["schema"] == {
            "$ref": "#/components/schemas/Error"
        }
