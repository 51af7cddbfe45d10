"""A well-formed request that the resource's current state does not allow is 409
`conflict_error` with a specific code, and changes nothing: one test per route that answered
400 for it before. Appealing or accepting a case that is not open stays 400, as the contract
fixes it."""

from collections.abc import Callable
from datetime import timedelta
from functools import partial

import pytest

from app.models import DisputeEvidence
from app.models.base import utcnow
from tests.support import charges
from tests.support import disputes as d
from tests.support.http import assert_error, count_rows
from tests.support.payments import finalised, get, paid, refund
from tests.support.payouts import funded_merchant, request, staff_headers
from tests.support.refunds import merchant as make_merchant
from tests.support.refunds import update_transaction


@pytest.fixture
def shop(app, monkeypatch):
    return make_merchant(app, monkeypatch)


def refused_without_change(answer: Callable, read: Callable, code: str) -> None:
    """`answer()` is 409 `code` and `read()` (the resource, the money, the events) is the same
    before and after it."""
    before = read()
    assert_error(answer(), 409, "conflict_error", code)
    assert read() == before


def _balance(client, api_key: str) -> dict:
    return client.get("/v1/wallets/balance", headers={"apikey": api_key}).get_json()


def _payment_state(app, client, api_key: str, payment_id: str) -> Callable:
    return lambda: (
        get(client, api_key, payment_id).get_json(),
        _balance(client, api_key),
        charges.event_types(app, payment_id),
    )


def _case_state(app, client, api_key: str, case_id: str) -> Callable:
    return lambda: (
        d.call(client, api_key, "GET", f"/v1/med/cases/{case_id}").get_json(),
        _balance(client, api_key),
        d.case_events(app, case_id),
        count_rows(app, DisputeEvidence),
    )


def test_cancelling_a_settled_payment(app, redis, client, shop):
    payment = paid(app, redis, client, shop.api_key)
    refused_without_change(
        lambda: client.post(
            f"/v1/payments/{payment['id']}/cancel", headers={"apikey": shop.api_key}
        ),
        _payment_state(app, client, shop.api_key, payment["id"]),
        "transaction_not_cancellable",
    )


def test_the_receipt_of_an_unpaid_payment(app, redis, client, shop):
    payment = finalised(app, redis, client, shop.api_key)
    refused_without_change(
        lambda: client.get(
            f"/v1/payments/{payment['id']}/receipt", headers={"apikey": shop.api_key}
        ),
        _payment_state(app, client, shop.api_key, payment["id"]),
        "transaction_not_settled",
    )


def test_refunding_a_payment_its_state_does_not_let_refund(app, redis, client, shop):
    unpaid = finalised(app, redis, client, shop.api_key)
    disputed = d.paid_charge(app, client, shop)
    d.opened(client, shop, disputed["id"])
    too_old = paid(app, redis, client, shop.api_key)
    update_transaction(app, too_old["id"], paid_at=utcnow() - timedelta(days=91))
    for payment_id, body, code in (
        (unpaid["id"], {}, "transaction_not_refundable"),
        (disputed["id"], {}, "charge_disputed"),
        (too_old["id"], {"strategy": "devolution"}, "refund_window_expired"),
    ):
        refused_without_change(
            partial(refund, client, shop.api_key, payment_id, **body),
            _payment_state(app, client, shop.api_key, payment_id),
            code,
        )


def test_cancelling_an_approved_payout(app, client, monkeypatch):
    merchant = funded_merchant(app, client, monkeypatch)
    payout_id = request(client, merchant).get_json()["id"]
    approved = client.post(
        f"/v1/admin/withdrawals/{payout_id}/approve", headers=staff_headers(app, client)
    )
    assert approved.status_code == 200, approved.get_json()
    refused_without_change(
        lambda: client.post(f"/v1/withdrawals/{payout_id}/cancel", headers=merchant.headers),
        lambda: (
            client.get(f"/v1/withdrawals/{payout_id}", headers=merchant.headers).get_json(),
            _balance(client, merchant.api_key),
        ),
        "withdrawal_not_cancellable",
    )


def test_evidence_for_a_decided_case(app, client, shop):
    case = d.opened(client, shop, d.paid_charge(app, client, shop)["id"])
    assert d.decide(client, shop.api_key, case["id"], "rejected").status_code == 200
    refused_without_change(
        lambda: d.ticket(client, shop.api_key, case["id"], b"%PDF-1.4"),
        _case_state(app, client, shop.api_key, case["id"]),
        "med_case_not_open",
    )


def test_accepting_a_case_under_review(app, client, shop):
    charge = d.paid_charge(app, client, shop)
    case = d.opened(client, shop, charge["id"], amount=d.AMOUNT - 100)
    accept = f"/v1/med/cases/{case['id']}/accept"
    refused_without_change(
        lambda: d.call(client, shop.api_key, "POST", accept),
        _case_state(app, client, shop.api_key, case["id"]),
        "med_case_under_review",
    )
    # The contract's exception: accepting a case that is no longer open stays 400.
    assert d.decide(client, shop.api_key, case["id"], "refunded_to_merchant").status_code == 200
    again = d.call(client, shop.api_key, "POST", accept)
    assert_error(again, 400, "invalid_request_error", "med_case_not_open")


def test_the_sandbox_asking_evidence_for_a_decided_case(app, client, shop):
    case = d.opened(client, shop, d.paid_charge(app, client, shop)["id"])
    assert d.decide(client, shop.api_key, case["id"], "closed_without_refund").status_code == 200
    path = f"/v1/sandbox/med/cases/{case['id']}/request-evidence"
    refused_without_change(
        lambda: d.call(client, shop.api_key, "POST", path),
        _case_state(app, client, shop.api_key, case["id"]),
        "med_case_not_open",
    )


def test_the_sandbox_deciding_a_decided_case_or_losing_one_under_review(app, client, shop):
    decided = d.opened(client, shop, d.paid_charge(app, client, shop)["id"])
    assert d.decide(client, shop.api_key, decided["id"], "rejected").status_code == 200
    in_review = d.opened(
        client, shop, d.paid_charge(app, client, shop)["id"], amount=d.AMOUNT - 100
    )
    for case_id, code in (
        (decided["id"], "med_case_not_open"),
        (in_review["id"], "med_case_under_review"),
    ):
        refused_without_change(
            partial(d.decide, client, shop.api_key, case_id, "rejected"),
            _case_state(app, client, shop.api_key, case_id),
            code,
        )
