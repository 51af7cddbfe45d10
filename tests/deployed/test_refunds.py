"""Refunds through the deployed stack: the request answers at once (never refused for
timing), the money worker hands it to the provider and `rq cron`'s polling job ends it
REFUNDED, or FAILED with the money back; a funded refund cannot be cancelled."""

import uuid

import pytest

from tests.support.deployed import RELEASE_SECONDS, created, new_charge, pay, released

pytestmark = pytest.mark.slow

CHARGE = 60_000
FAILING_REFUND = 50_300  # the sandbox's payer bank refuses refunds of 503,00
REFUND = 10_000
SETTLE_SECONDS = 20


def _refund(deployed, payment_id: str, amount: int) -> dict:
    body = {"idempotencyKey": uuid.uuid4().hex, "amount": amount, "strategy": "devolution"}
    return created(deployed.api("POST", f"/v1/payments/{payment_id}/refund", json=body))


def _ended(deployed, payment_id: str, refund_id: str) -> str | None:
    """The refund's status once it is final, else None."""
    listed = deployed.api("GET", f"/v1/payments/{payment_id}/refunds")
    assert listed.status_code == 200, listed.text
    (refund,) = [r for r in listed.json()["data"] if r["id"] == refund_id]
    return refund["status"] if refund["status"] in ("REFUNDED", "FAILED") else None


def test_refunds_go_through_the_worker_and_cron_to_their_end(deployed):
    before = deployed.wait_for(lambda: released(deployed), RELEASE_SECONDS, "earlier releases")
    charge = new_charge(deployed, amount=CHARGE)
    pay(deployed, charge)
    payment_id = charge["id"].removeprefix("ch_")
    net = deployed.api("GET", f"/v1/payments/{payment_id}").json()["netAmount"]

    failing = _refund(deployed, payment_id, FAILING_REFUND)  # right after payment: 201
    assert (failing["status"], failing["pendingReason"]) == ("PENDING", None)
    cancel = deployed.api("POST", f"/v1/payments/{payment_id}/refunds/{failing['id']}/cancel")
    assert cancel.status_code == 409, cancel.text
    assert cancel.json()["error"]["code"] == "refund_not_cancellable"
    ended = deployed.wait_for(
        lambda: _ended(deployed, payment_id, failing["id"]), SETTLE_SECONDS, "the failed refund"
    )
    assert ended == "FAILED"

    refunded = _refund(deployed, payment_id, REFUND)
    ended = deployed.wait_for(
        lambda: _ended(deployed, payment_id, refunded["id"]), SETTLE_SECONDS, "the refund"
    )
    assert ended == "REFUNDED"
    after = deployed.wait_for(
        lambda: released(deployed, total_above=before["total"]), RELEASE_SECONDS, "the release"
    )
    assert after["total"] - before["total"] == net - REFUND  # the failed one gave all back
    assert after["retained"] == before["retained"]
