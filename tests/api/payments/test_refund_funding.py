"""Refunds are never refused for timing: the payment's own unreleased tranche pays first,
then available; what neither covers waits (PENDING with `pendingReason`), is funded by the
polling job once money is there, and can be cancelled until then."""

import pytest
import sqlalchemy as sa

from app.extensions import db
from app.models import RefundStatus, SettlementRelease
from tests.support.http import assert_error
from tests.support.payments import refund
from tests.support.refunds import (
    PIX_PAYOUT_FEE,
    assert_ledger_clean,
    list_refunds,
    paid_payment,
    poll,
    refund_row,
    refunded,
    release,
    submit_and_poll,
)
from tests.support.refunds import merchant as make_merchant


@pytest.fixture
def merchant(app, monkeypatch):
    return make_merchant(app, monkeypatch)


def balance(client, merchant) -> dict:
    response = client.get("/v1/wallets/balance?currency=BRL", headers={"apikey": merchant.api_key})
    assert response.status_code == 200
    body = response.get_json()
    return {"available": body["available"], "pending": body["pending"]}


def tranches(app) -> list[tuple[int, bool]]:
    """Each settlement tranche's amount and whether it was released."""
    with app.app_context():
        rows = db.session.scalars(sa.select(SettlementRelease)).all()
        return [(row.amount, row.released_at is not None) for row in rows]


def cancel(client, merchant, payment_id, refund_id):
    return client.post(
        f"/v1/payments/{payment_id}/refunds/{refund_id}/cancel",
        headers={"apikey": merchant.api_key},
    )


def test_a_refund_right_after_payment_comes_from_the_payments_own_tranche(
    app, client, redis, merchant
):
    payment = paid_payment(app, redis, client, merchant, amount=20_000, released=False)
    assert balance(client, merchant) == {"available": 0, "pending": 20_000}

    body = refunded(client, merchant, payment["id"], amount=5_000)
    assert (body["status"], body["pendingReason"]) == ("PENDING", None)
    assert balance(client, merchant) == {"available": 0, "pending": 15_000}
    assert refund_row(app, body["id"]).taken_from_pending == 5_000
    submit_and_poll(app, redis)
    assert refund_row(app, body["id"]).status is RefundStatus.REFUNDED

    release(app)  # the tranche releases what is left of it
    assert balance(client, merchant) == {"available": 15_000, "pending": 0}
    assert_ledger_clean(app)


def test_a_full_refund_right_after_payment_empties_the_tranche(app, client, redis, merchant):
    payment = paid_payment(app, redis, client, merchant, amount=20_000, released=False)
    body = refunded(client, merchant, payment["id"])
    assert (body["amount"], body["pendingReason"]) == (20_000, None)
    submit_and_poll(app, redis)
    release(app)
    assert balance(client, merchant) == {"available": 0, "pending": 0}
    assert tranches(app) == [(0, True)]
    assert_ledger_clean(app)


def test_a_failed_refund_gives_the_tranche_back_while_it_is_pending(app, client, redis, merchant):
    payment = paid_payment(app, redis, client, merchant, amount=60_000, released=False)
    body = refunded(client, merchant, payment["id"], amount=50_300)  # the sandbox fails it
    assert balance(client, merchant) == {"available": 0, "pending": 9_700}
    submit_and_poll(app, redis)
    assert refund_row(app, body["id"]).status is RefundStatus.FAILED
    assert balance(client, merchant) == {"available": 0, "pending": 60_000}
    release(app)
    assert balance(client, merchant) == {"available": 60_000, "pending": 0}
    assert_ledger_clean(app)


def test_what_nothing_covers_waits_for_funds_then_goes_out(app, client, redis, merchant):
    payment = paid_payment(app, redis, client, merchant, amount=20_000)
    # The Pix-out fee is the merchant's cost: the released 20 000 do not cover 20 000 + fee.
    body = refunded(client, merchant, payment["id"], passFeeToTenant=True)
    assert (body["status"], body["pendingReason"]) == ("PENDING", "insufficient_funds")
    assert balance(client, merchant) == {"available": 20_000, "pending": 0}
    submit_and_poll(app, redis)  # nothing is sent while it waits
    assert refund_row(app, body["id"]).status is RefundStatus.PENDING

    paid_payment(app, redis, client, merchant, amount=1_000)  # new sales cover the fee
    poll(app)  # funds it and queues its submission
    row = refund_row(app, body["id"])
    assert (row.status, row.pending_reason) == (RefundStatus.PENDING, None)
    assert balance(client, merchant) == {"available": 1_000 - PIX_PAYOUT_FEE, "pending": 0}
    submit_and_poll(app, redis)
    assert refund_row(app, body["id"]).status is RefundStatus.REFUNDED
    (listed,) = list_refunds(client, merchant, payment["id"]).get_json()["data"]
    assert (listed["status"], listed["pendingReason"]) == ("REFUNDED", None)
    assert_ledger_clean(app)


def test_a_refund_that_pending_releases_will_cover_says_charge_pending(
    app, client, redis, merchant
):
    first = paid_payment(app, redis, client, merchant, amount=20_000)
    paid_payment(app, redis, client, merchant, amount=10_000, released=False)
    body = refunded(client, merchant, first["id"], passFeeToTenant=True)
    assert body["pendingReason"] == "charge_pending"
    release(app)
    poll(app)
    assert refund_row(app, body["id"]).pending_reason is None
    assert balance(client, merchant) == {"available": 10_000 - PIX_PAYOUT_FEE, "pending": 0}
    assert_ledger_clean(app)


def test_a_waiting_refund_is_reserved_against_the_transaction(app, client, redis, merchant):
    payment = paid_payment(app, redis, client, merchant, amount=20_000)
    refunded(client, merchant, payment["id"], passFeeToTenant=True)
    response = refund(client, merchant.api_key, payment["id"], amount=1)
    assert_error(response, 400, "invalid_request_error", "refund_exceeds_refundable", "amount")


def test_the_merchant_cancels_a_waiting_refund_and_nothing_moves(app, client, redis, merchant):
    payment = paid_payment(app, redis, client, merchant, amount=20_000)
    body = refunded(client, merchant, payment["id"], passFeeToTenant=True)

    response = cancel(client, merchant, payment["id"], body["id"])
    assert response.status_code == 200, response.get_json()
    assert (response.get_json()["status"], response.get_json()["pendingReason"]) == (
        "FAILED",
        None,
    )
    assert balance(client, merchant) == {"available": 20_000, "pending": 0}
    paid_payment(app, redis, client, merchant, amount=5_000)
    poll(app)  # a cancelled refund is never funded
    assert refund_row(app, body["id"]).status is RefundStatus.FAILED
    assert balance(client, merchant)["available"] == 25_000

    again = cancel(client, merchant, payment["id"], body["id"])
    assert_error(again, 409, "conflict_error", "refund_not_cancellable")
    assert refunded(client, merchant, payment["id"])["amount"] == 20_000  # freed again
    assert_ledger_clean(app)


def test_a_funded_refund_cannot_be_cancelled(app, client, redis, merchant):
    payment = paid_payment(app, redis, client, merchant, amount=20_000)
    body = refunded(client, merchant, payment["id"], amount=1_000)
    response = cancel(client, merchant, payment["id"], body["id"])
    assert_error(response, 409, "conflict_error", "refund_not_cancellable")
    assert refund_row(app, body["id"]).status is RefundStatus.PENDING


def test_cancel_finds_only_the_callers_refunds(app, client, redis, merchant):
    payment = paid_payment(app, redis, client, merchant, amount=20_000)
    body = refunded(client, merchant, payment["id"], passFeeToTenant=True)
    assert_error(
        cancel(client, merchant, payment["id"], "missing"), 404, "not_found_error", "not_found"
    )
    other = paid_payment(app, redis, client, merchant, amount=3_000)
    assert_error(
        cancel(client, merchant, other["id"], body["id"]), 404, "not_found_error", "not_found"
    )
