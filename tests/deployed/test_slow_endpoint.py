"""One merchant's slow webhook endpoint never delays anyone else (issue 19, case 3), on the
Procfile's own processes: money jobs run in the `worker` process, deliveries in `webhooks`,
one endpoint gets at most WEBHOOK_ENDPOINT_CONCURRENCY attempts at a time, and an attempt ends
at WEBHOOK_TIMEOUT_SECONDS whatever the endpoint is doing.

Nothing here is timed against a target: the endpoint records when each request arrived and
when its sender hung up, and the tests check that another merchant's payment was finalised,
and another endpoint served, while a slow delivery that began before them was still open.
On one shared worker that cannot happen: it was busy in that delivery."""

import time

import pytest

from app.services.webhooks.transport import TIMED_OUT_ERROR
from tests.support.charges import charge_body
from tests.support.deployed import WEBHOOK_TIMEOUT_SECONDS, DeployedStack, created, new_charge
from tests.support.payments import payment_body
from tests.support.receiver import receiving
from tests.support.slow_endpoint import Mode, SlowEndpoint, slow_endpoint

pytestmark = pytest.mark.slow

SLOW_DELIVERIES = 4
WAIT_SECONDS = 30
ENDPOINT_CONCURRENCY = 1  # the stack's WEBHOOK_ENDPOINT_CONCURRENCY
DEADLINE_SLACK_SECONDS = 5  # the worker notices the cut, and our endpoint notices the hang-up


@pytest.fixture
def slow_shop(deployed: DeployedStack) -> dict:
    """The headers of a second merchant, the one whose endpoint is slow."""
    _, api_key = deployed.new_merchant("Loja com webhook lento")
    return {"apikey": api_key}


def _register(deployed: DeployedStack, headers: dict, url: str, events: list[str]) -> str:
    endpoint = created(
        deployed.api(
            "POST", "/v1/webhooks/endpoints", json={"url": url, "events": events}, headers=headers
        )
    )
    return endpoint["id"]


def _held_deliveries(deployed: DeployedStack, headers: dict, endpoint: SlowEndpoint) -> None:
    """Queue SLOW_DELIVERIES charge.created deliveries to the slow endpoint and wait until it
    holds one."""
    for _ in range(SLOW_DELIVERIES):
        created(deployed.api("POST", "/v1/charges", json=charge_body(), headers=headers))
    deployed.wait_for(endpoint.open_requests, WAIT_SECONDS, "the slow endpoint's first delivery")


def test_a_slow_endpoint_never_delays_another_merchants_payment(deployed, slow_shop):
    with slow_endpoint(Mode.HOLD) as endpoint:
        endpoint_id = _register(deployed, slow_shop, endpoint.url, ["charge.created"])
        try:
            _held_deliveries(deployed, slow_shop, endpoint)
            asked = time.monotonic()
            payment = created(deployed.api("POST", "/v1/payments", json=payment_body()))

            def finalised() -> dict | None:
                shown = deployed.api("GET", f"/v1/payments/{payment['id']}").json()
                return shown if shown.get("pixCopyPaste") else None

            shown = deployed.wait_for(finalised, WAIT_SECONDS, "the payment to be finalised")
            seen = time.monotonic()
        finally:
            deployed.api("DELETE", f"/v1/webhooks/endpoints/{endpoint_id}", headers=slow_shop)

    assert shown["status"] == "WAITING_PAYMENT" and shown["pixQrCode"]
    assert any(request.open_throughout(asked, seen) for request in endpoint.requests), (
        "the payment waited for the slow deliveries",
        asked,
        seen,
        endpoint.requests,
    )


def test_a_slow_endpoint_leaves_delivery_slots_for_other_endpoints(deployed, slow_shop):
    with slow_endpoint(Mode.HOLD) as endpoint, receiving() as receiver:
        slow_id = _register(deployed, slow_shop, endpoint.url, ["charge.created"])
        fast_id = _register(deployed, {}, receiver.url, ["charge.created"])
        try:
            _held_deliveries(deployed, slow_shop, endpoint)
            asked = time.monotonic()
            charge = new_charge(deployed, 2_000)
            deployed.wait_for(
                lambda: any(charge["id"].encode() in each.body for each in receiver.received),
                WAIT_SECONDS,
                "the other merchant's delivery",
            )
            seen = time.monotonic()
        finally:
            deployed.api("DELETE", f"/v1/webhooks/endpoints/{slow_id}", headers=slow_shop)
            deployed.api("DELETE", f"/v1/webhooks/endpoints/{fast_id}")

    assert any(request.open_throughout(asked, seen) for request in endpoint.requests)
    assert endpoint.most_open_at_once <= ENDPOINT_CONCURRENCY


def test_an_endpoint_trickling_its_headers_is_cut_off_at_the_webhook_timeout(deployed, slow_shop):
    with slow_endpoint(Mode.TRICKLE) as endpoint:
        endpoint_id = _register(deployed, slow_shop, endpoint.url, ["charge.created"])
        try:
            created(deployed.api("POST", "/v1/charges", json=charge_body(), headers=slow_shop))
            first = deployed.wait_for(
                lambda: endpoint.requests and endpoint.requests[0],
                WAIT_SECONDS,
                "the trickled delivery",
            )
            deployed.wait_for(
                lambda: first.hung_up,
                WEBHOOK_TIMEOUT_SECONDS + DEADLINE_SLACK_SECONDS,
                "the worker to give up on the trickling endpoint",
            )
            delivery = deployed.wait_for(
                lambda: _attempted(deployed, slow_shop, endpoint_id),
                WAIT_SECONDS,
                "the attempt's outcome in the delivery log",
            )
        finally:
            deployed.api("DELETE", f"/v1/webhooks/endpoints/{endpoint_id}", headers=slow_shop)

    assert delivery["lastStatusCode"] is None
    assert delivery["lastError"] == TIMED_OUT_ERROR.format(seconds=WEBHOOK_TIMEOUT_SECONDS)


def _attempted(deployed: DeployedStack, headers: dict, endpoint_id: str) -> dict | None:
    """The endpoint's delivery once an attempt's outcome is logged."""
    page = deployed.api(
        "GET", f"/v1/webhooks/deliveries?endpointId={endpoint_id}", headers=headers
    ).json()
    return next((each for each in page["data"] if each["lastError"]), None)
