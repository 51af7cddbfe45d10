"""The delivery engine keeps connections alive (issue 22), on the Procfile's own `webhooks`
processes: deliveries to an endpoint whose server keeps connections open share them, and
each is still delivered exactly once."""

import collections

import pytest

from tests.support.charges import charge_body
from tests.support.deployed import created
from tests.support.receiver import receiving

pytestmark = pytest.mark.slow

DELIVERIES = 8
WAIT_SECONDS = 30
HELD_SECONDS = 2  # the first answer waits, so the others are due in the same engine run


def test_deliveries_to_one_endpoint_share_a_kept_connection(deployed):
    with receiving(keep_alive=True) as receiver:
        receiver.reply(200, delay=HELD_SECONDS)
        endpoint = created(
            deployed.api(
                "POST",
                "/v1/webhooks/endpoints",
                json={"url": receiver.url, "events": ["charge.created"]},
            )
        )
        for _ in range(DELIVERIES):
            created(deployed.api("POST", "/v1/charges", json=charge_body()))
        deployed.wait_for(
            lambda: len(recorded(deployed, endpoint)) >= DELIVERIES,
            WAIT_SECONDS,
            "every delivery recorded",
        )
        deliveries = recorded(deployed, endpoint)

    delivery_ids = [received.headers["X-Acme-Delivery-Id"] for received in receiver.received]
    assert len(delivery_ids) == len(set(delivery_ids)) == DELIVERIES
    per_connection = collections.Counter(received.connection for received in receiver.received)
    assert max(per_connection.values()) >= 2, per_connection
    assert {delivery["status"] for delivery in deliveries} == {"DELIVERED"}
    assert {delivery["attempts"] for delivery in deliveries} == {1}


def recorded(deployed, endpoint) -> list[dict]:
    """The endpoint's deliveries whose outcome the engine has written: the receiver sees a
    POST before its answer reaches the engine, so its count alone comes too early."""
    deliveries = deployed.api(
        "GET", f"/v1/webhooks/deliveries?endpointId={endpoint['id']}&limit=100"
    ).json()["data"]
    unsettled = {"PENDING", "PROCESSING"}
    return [delivery for delivery in deliveries if delivery["status"] not in unsettled]
