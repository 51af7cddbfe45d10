"""One merchant's slow webhook endpoint never delays another merchant's payments: the
Procfile's workers, as deployed, run money jobs in processes of their own, so a payment is
finalised at once while every webhook worker waits on that endpoint."""

import time

import pytest

from tests.support import charges, factories, payments
from tests.support.processes import wait_for

pytestmark = pytest.mark.slow
RECEIVER_DELAY_SECONDS = 3
SLOW_DELIVERIES = 6
FINALISED_WITHIN_SECONDS = 1.5  # one delivery's wait would be twice this; all of them, 12x


def test_a_slow_endpoint_never_delays_another_merchants_payment(
    app, client, app_redis, receiver, workers
):
    slow_shop = factories.make_api_key(app, factories.make_account(app))
    other_shop = factories.make_api_key(app, factories.make_account(app))
    response = client.post(
        "/v1/webhooks/endpoints",
        json={"url": receiver.url, "events": ["charge.created"]},
        headers={"apikey": slow_shop},
    )
    assert response.status_code == 201, response.get_json()
    workers.start_procfile(
        WEBHOOK_TIMEOUT_SECONDS=str(RECEIVER_DELAY_SECONDS + 2), WEBHOOK_PROCESSES="2"
    )
    _finalised(client, other_shop, timeout=60)  # the workers are up and take money jobs

    for _ in range(SLOW_DELIVERIES):
        receiver.reply(200, delay=RECEIVER_DELAY_SECONDS)
        charges.created(client, slow_shop)
    wait_for(lambda: receiver.received, 30, "the slow endpoint to be sent its first delivery")
    started = time.monotonic()
    payment = _finalised(client, other_shop, timeout=30)
    took = time.monotonic() - started

    assert took < FINALISED_WITHIN_SECONDS, (took, workers.output()[-3000:])
    assert payment["pixCopyPaste"] and payment["pixQrCode"]
    assert len(receiver.received) < SLOW_DELIVERIES  # the slow deliveries are still going


def _finalised(client, api_key: str, timeout: float) -> dict:
    """Create a Pix payment and poll until it shows its finalised fields."""
    payment_id = payments.created(client, api_key)["id"]

    def shown():
        payment = payments.get(client, api_key, payment_id).get_json()
        return payment if payment["status"] == "WAITING_PAYMENT" else None

    return wait_for(shown, timeout, "the payment to be finalised")
