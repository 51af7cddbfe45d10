"""A dispute meeting the merchant's refunds: the case holds exactly what is at risk at every
step (the charge less refunds that completed), and each decision settles exactly the hold,
in sequence and with the refund and the dispute racing on PostgreSQL.

The first test is the leak found against the Procfile stack: the case held only 49 700 of a
100 000 charge because a refund of 50 300 was in flight, the refund then failed, and the
loss left the merchant down 49 700 while the platform paid the payer's bank the gap."""

import threading
from concurrent.futures import ThreadPoolExecutor

import pytest

from app.extensions import db
from app.models import DisputeCase
from tests.support import disputes as d
from tests.support.payments import refund
from tests.support.refunds import (
    assert_ledger_clean,
    available,
    poll,
    refund_row,
    submit_and_poll,
)

CHARGE = 100_000
FAILING_REFUND = 50_300  # the sandbox's payer bank refuses refunds of 503,00


def balances(client, shop) -> tuple[int, int]:
    body = client.get("/v1/wallets/balance", headers={"apikey": shop.api_key}).get_json()
    return body["available"], body["retained"]


def held(app, case_id) -> int:
    """What the case holds (not in the public case object: the wallet's `retained` is)."""
    with app.app_context():
        return db.session.get(DisputeCase, case_id).held_amount


def accept(client, shop, case_id) -> dict:
    response = d.call(client, shop.api_key, "POST", f"/v1/med/cases/{case_id}/accept")
    assert response.status_code == 200, response.get_json()
    return response.get_json()


def raw(charge_id: str) -> str:
    return charge_id.removeprefix("ch_")


def test_a_failing_refund_in_flight_leaves_the_whole_amount_held_and_lost(app, client, redis, shop):
    charge = d.paid_charge(app, client, shop, amount=CHARGE)
    response = refund(client, shop.api_key, raw(charge["id"]), amount=FAILING_REFUND)
    assert response.status_code == 201, response.get_json()
    case = d.opened(client, shop, charge["id"])
    assert held(app, case["id"]) == CHARGE  # as if it will fail
    assert balances(client, shop) == (-FAILING_REFUND, CHARGE)

    submit_and_poll(app, redis)  # the payer's bank refuses the refund
    assert str(refund_row(app, response.get_json()["id"]).status) == "FAILED"
    assert balances(client, shop) == (0, CHARGE)
    assert_ledger_clean(app)

    assert accept(client, shop, case["id"])["money_outcome"] == "lost"
    assert balances(client, shop) == (0, 0)  # the whole 100 000 went back to the payer
    assert_ledger_clean(app)


def test_a_refund_completing_during_the_case_releases_its_part_of_the_hold(
    app, client, redis, shop
):
    charge = d.paid_charge(app, client, shop, amount=CHARGE)
    response = refund(client, shop.api_key, raw(charge["id"]), amount=30_000)
    assert response.status_code == 201
    case = d.opened(client, shop, charge["id"])
    assert balances(client, shop) == (-30_000, CHARGE)

    submit_and_poll(app, redis)  # the refund reaches the payer
    assert held(app, case["id"]) == 70_000
    assert balances(client, shop) == (0, 70_000)
    assert_ledger_clean(app)

    accept(client, shop, case["id"])
    assert balances(client, shop) == (0, 0)  # 30 000 refunded + 70 000 lost
    assert_ledger_clean(app)


@pytest.mark.parametrize(
    ("decision", "available_after"),
    [("refunded_to_merchant", 70_000), ("rejected", 0), ("closed_without_refund", 0)],
)
def test_each_decision_settles_exactly_the_hold(
    app, client, redis, shop, decision, available_after
):
    charge = d.paid_charge(app, client, shop, amount=CHARGE)
    assert refund(client, shop.api_key, raw(charge["id"]), amount=30_000).status_code == 201
    submit_and_poll(app, redis)  # completed before the dispute: never held
    case = d.opened(client, shop, charge["id"])
    assert held(app, case["id"]) == 70_000
    if decision == "rejected":
        appeal = d.call(
            client,
            shop.api_key,
            "POST",
            f"/v1/med/cases/{case['id']}/appeal",
            json={"reason": "The goods were delivered."},
        )
        assert appeal.status_code == 200
    assert d.decide(client, shop.api_key, case["id"], decision).status_code == 200
    assert balances(client, shop) == (available_after, 0)
    assert_ledger_clean(app)


def test_a_refund_waiting_for_funds_ends_when_the_dispute_is_lost(app, client, redis, shop):
    charge = d.paid_charge(app, client, shop, amount=CHARGE)
    waiting = refund(client, shop.api_key, raw(charge["id"]), passFeeToTenant=True).get_json()
    assert waiting["pendingReason"] == "insufficient_funds"
    case = d.opened(client, shop, charge["id"])
    assert held(app, case["id"]) == CHARGE
    d.paid_charge(app, client, shop, amount=CHARGE)  # money arrives, but the case is open
    poll(app)
    assert refund_row(app, waiting["id"]).pending_reason is not None
    accept(client, shop, case["id"])
    row = refund_row(app, waiting["id"])
    assert (str(row.status), row.pending_reason) == ("FAILED", None)
    assert "dispute was lost" in row.failure_reason
    assert balances(client, shop) == (CHARGE, 0)  # only the second charge is left
    assert_ledger_clean(app)


@pytest.mark.postgres
@pytest.mark.parametrize("refund_amount", [FAILING_REFUND, 30_000])
def test_a_refund_and_a_dispute_racing_hold_what_is_at_risk(
    app, client, redis, shop, is_postgres, refund_amount
):
    """On PostgreSQL, three charges each get a refund request and a dispute at the same
    moment; whatever order the locks give them, the loss costs the merchant exactly the
    charge (a failed refund) or the charge in two parts (a completed one)."""
    if not is_postgres:
        pytest.skip("row locks and real concurrency need PostgreSQL")
    paid = [d.paid_charge(app, client, shop, amount=CHARGE) for _ in range(3)]
    start = threading.Barrier(2 * len(paid))

    def send(job):
        kind, charge = job
        with app.test_client() as http:
            start.wait()
            if kind == "refund":
                return refund(http, shop.api_key, raw(charge["id"]), amount=refund_amount)
            return d.dispute(http, shop.api_key, charge["id"])

    jobs = [(kind, charge) for charge in paid for kind in ("refund", "dispute")]
    with ThreadPoolExecutor(max_workers=len(jobs)) as pool:
        answers = list(pool.map(send, jobs))
    cases = [a.get_json() for (kind, _), a in zip(jobs, answers, strict=True) if kind == "dispute"]
    for (kind, _), answer in zip(jobs, answers, strict=True):
        if kind == "refund" and answer.status_code == 409:  # the dispute came first
            assert answer.get_json()["error"]["code"] == "charge_disputed"
        else:
            assert answer.status_code == 201, answer.get_json()
    assert_ledger_clean(app)

    submit_and_poll(app, redis)
    assert_ledger_clean(app)
    for case in cases:
        accept(client, shop, case["id"])
    assert balances(client, shop) == (0, 0)  # 3 x 100 000 in, all of it back to payers
    assert_ledger_clean(app)
    assert available(client, shop) == 0
