"""Dispute cases through the real HTTP surface: opening by the sandbox's dispute channel, the
merchant's appeal and acceptance, the channel's decisions, and the money, charge status,
metadata and events of every transition (never a `charge.*` event because of a dispute)."""

import threading
from concurrent.futures import ThreadPoolExecutor

import pytest
import sqlalchemy as sa

from app.cli import check_ledger
from app.errors import ApiError
from app.extensions import db
from app.models import KeyMode, LedgerPosting
from app.services.disputes import cases
from tests.support import charges, factories
from tests.support import disputes as d
from tests.support.payments import paid
from tests.support.refunds import available, refund, release, submit_and_poll


@pytest.fixture
def charge(app, client, shop):
    return d.paid_charge(app, client, shop)


def _ledger_clean(app) -> None:
    """`flask ledger check` passes: every wallet equals its entries, every posting is 0."""
    result = app.test_cli_runner().invoke(check_ledger)
    assert result.exit_code == 0, result.output


def _balance(client, shop) -> dict:
    return client.get("/v1/wallets/balance", headers={"apikey": shop.api_key}).get_json()


def _postings(app, case_id: str) -> list[str]:
    with app.app_context():
        return sorted(
            db.session.scalars(
                sa.select(LedgerPosting.kind).where(LedgerPosting.reference_id == case_id)
            )
        )


def _charge_events(app, charge_id: str) -> list[str]:
    return sorted(t for t in charges.event_types(app, charge_id) if t.startswith("charge."))


def _charge(client, shop, charge_id: str) -> dict:
    return charges.get(client, shop.api_key, charge_id).get_json()


def test_opening_holds_the_amount_and_disputes_the_charge(app, client, shop, charge):
    before = _balance(client, shop)
    case = d.opened(
        client, shop, charge["id"], method="unauthorized", reason="Não reconheço", payer_name="Ana"
    )
    assert case["id"].startswith("med_") and case["object"] == "med_case"
    assert (case["status"], case["type"], case["amount"], case["currency"]) == (
        "open",
        "med",
        d.AMOUNT,
        "BRL",
    )
    assert case["charge_id"] == charge["id"] and case["reason"] == "Não reconheço"
    assert case["response_deadline"] is not None and case["money_outcome"] is None
    assert (case["closed_at"], case["evidence_count"], case["appeal_reason"]) == (None, 0, None)

    after = _balance(client, shop)
    assert after["available"] == before["available"] - d.AMOUNT
    assert after["retained"] == before["retained"] + d.AMOUNT
    disputed = _charge(client, shop, charge["id"])
    assert disputed["status"] == "disputed"
    med = disputed["metadata"]["med"]
    assert med["referenceId"] == charge["settlement"]["end_to_end_id"]
    assert (med["status"], med["method"], med["payerName"], med["amountMismatch"]) == (
        "created",
        "unauthorized",
        "Ana",
        False,
    )
    assert {"openedAt", "updatedAt", "lastEventAt"} <= med.keys() and "payerDocument" not in med
    assert _postings(app, case["id"]) == ["dispute_hold"]
    _ledger_clean(app)


def test_the_wallet_may_go_negative_and_the_ledger_stays_balanced(app, client, shop):
    charge = d.paid_charge(app, client, shop, released=False)  # still pending release
    assert available(client, shop) == 0
    d.opened(client, shop, charge["id"])
    assert available(client, shop) == -d.AMOUNT
    _ledger_clean(app)


def test_the_same_notification_again_returns_the_same_case(app, client, shop, charge):
    first = d.opened(client, shop, charge["id"], external_id="inf-1")
    again = d.dispute(client, shop.api_key, charge["id"], external_id="inf-1")
    assert again.status_code == 200 and again.get_json()["id"] == first["id"]
    listed = d.call(client, shop.api_key, "GET", "/v1/med/cases").get_json()["data"]
    assert [c["id"] for c in listed] == [first["id"]]
    assert _postings(app, first["id"]) == ["dispute_hold"]
    assert [t for t, _ in d.case_events(app, first["id"])] == ["med_case.created"]


def test_a_different_amount_flags_the_case_and_changes_nothing_else(app, client, shop, charge):
    before = available(client, shop)
    case = d.opened(client, shop, charge["id"], amount=d.AMOUNT - 100)
    assert (case["status"], case["amount"]) == ("open", d.AMOUNT - 100)
    assert available(client, shop) == before
    after = _charge(client, shop, charge["id"])
    assert after["status"] == "paid" and after["metadata"]["med"]["amountMismatch"] is True
    row = d.case_row(app, case["id"])
    assert (row.amount_mismatch, row.under_review, row.held_amount) == (True, True, 0)
    assert _postings(app, case["id"]) == []

    # Nothing was held, so nothing can be lost until operations confirm an amount.
    accept = d.call(client, shop.api_key, "POST", f"/v1/med/cases/{case['id']}/accept")
    assert accept.status_code == 409
    assert accept.get_json()["error"]["code"] == "med_case_under_review"
    for decision in ("rejected", "closed_without_refund"):
        refused = d.decide(client, shop.api_key, case["id"], decision)
        assert refused.status_code == 409
        assert refused.get_json()["error"]["code"] == "med_case_under_review"
    appeal = f"/v1/med/cases/{case['id']}/appeal"
    assert (
        d.call(client, shop.api_key, "POST", appeal, json={"reason": "Valor errado"}).status_code
        == 200
    )
    decided = d.decide(client, shop.api_key, case["id"], "refunded_to_merchant")
    assert decided.get_json()["money_outcome"] == "refunded_to_merchant"
    assert available(client, shop) == before and _postings(app, case["id"]) == []
    assert _charge(client, shop, charge["id"])["status"] == "paid"
    _ledger_clean(app)


def test_a_confirmed_amount_is_held_and_can_then_be_lost(app, client, shop, charge):
    before = available(client, shop)
    case = d.opened(client, shop, charge["id"], amount=d.AMOUNT - 100)
    with app.app_context():
        with pytest.raises(ApiError) as refused:
            cases.confirm_amount(case["id"], d.AMOUNT + 1, None)
        assert refused.value.code == "invalid_amount"
        db.session.rollback()
        cases.confirm_amount(case["id"], d.AMOUNT - 100, None)
        db.session.commit()
    assert available(client, shop) == before - (d.AMOUNT - 100)
    assert _charge(client, shop, charge["id"])["status"] == "disputed"
    accept = d.call(client, shop.api_key, "POST", f"/v1/med/cases/{case['id']}/accept")
    assert accept.status_code == 200 and accept.get_json()["money_outcome"] == "lost"
    assert _postings(app, case["id"]) == ["dispute_hold", "dispute_loss"]
    assert available(client, shop) == before - (d.AMOUNT - 100)
    _ledger_clean(app)


def test_refunds_already_made_are_not_held_again(app, redis, client, shop):
    payment = paid(app, redis, client, shop.api_key, amount=10_000)
    release(app)
    assert refund(client, shop.api_key, payment["id"], amount=6_000).status_code == 201
    submit_and_poll(app, redis)
    assert available(client, shop) == 4_000
    case = d.opened(client, shop, payment["id"])  # the payer's bank claims all 10 000
    assert case["amount"] == 10_000
    assert d.case_row(app, case["id"]).held_amount == 4_000
    assert available(client, shop) == 0
    d.decide(client, shop.api_key, case["id"], "rejected")
    assert available(client, shop) == 0  # 6 000 refunded + 4 000 lost: the payment, no more
    _ledger_clean(app)


@pytest.mark.parametrize("status", ["pending", "expired"])
def test_only_a_paid_charge_can_be_disputed(app, client, shop, status):
    charge = charges.created(client, shop.api_key)
    if status == "expired":
        charges.update_row(app, charge["id"], status="EXPIRED")
    response = d.dispute(client, shop.api_key, charge["id"])
    assert response.status_code == 409
    assert response.get_json()["error"]["code"] == "charge_not_disputable"


def test_the_sandbox_channel_refuses_bad_reports_and_live_keys(app, client, shop, charge):
    for body, param in [
        ({"type": "bank"}, "type"),
        ({"method": "magic"}, "method"),
        ({"amount": 0}, "amount"),
        ({"amount": "10"}, "amount"),
        ({"amount": 10**20}, "amount"),
        ({"external_id": "a" * 64 + "\n"}, "external_id"),
        ({"external_id": "a" * 65}, "external_id"),
        ({"reason": "x" * 2001}, "reason"),
        ({"external_id": "has space"}, "external_id"),
        ({"response_deadline": "soon"}, "response_deadline"),
    ]:
        response = d.dispute(client, shop.api_key, charge["id"], **body)
        assert response.status_code == 400, body
        assert response.get_json()["error"]["details"][0]["param"] == param
    live_key = factories.make_api_key(app, shop.account_id, mode=KeyMode.LIVE)
    assert d.dispute(client, live_key, charge["id"]).status_code == 404
    other = factories.make_api_key(app, factories.make_account(app))
    assert d.dispute(client, other, charge["id"]).status_code == 404


def test_an_unknown_deadline_is_null(app, client, shop, charge):
    case = d.opened(client, shop, charge["id"], response_deadline=None)
    assert case["response_deadline"] is None


def test_appeal_keeps_the_money_held_and_only_from_open(app, client, shop, charge):
    case = d.opened(client, shop, charge["id"])
    held = available(client, shop)
    path = f"/v1/med/cases/{case['id']}/appeal"
    for reason in ["abcd", "x" * 2001, "    ab   ", None, 5]:
        response = d.call(client, shop.api_key, "POST", path, json={"reason": reason})
        assert response.status_code == 400, reason
        assert response.get_json()["error"]["type"] == "invalid_request_error"
    assert d.call(client, shop.api_key, "POST", path, json={}).status_code == 400
    response = d.call(client, shop.api_key, "POST", path, json={"reason": "Entregue, ver NF"})
    assert response.status_code == 200
    body = response.get_json()
    assert (body["status"], body["appeal_reason"], body["money_outcome"]) == (
        "appealed",
        "Entregue, ver NF",
        None,
    )
    assert body["appealed_at"] is not None and body["closed_at"] is None
    assert available(client, shop) == held
    assert _charge(client, shop, charge["id"])["metadata"]["med"]["status"] == "delivered"

    again = d.call(client, shop.api_key, "POST", path, json={"reason": "Outra vez"})
    assert again.status_code == 400 and again.get_json()["error"]["code"] == "med_case_not_open"
    accept = d.call(client, shop.api_key, "POST", f"/v1/med/cases/{case['id']}/accept")
    assert accept.status_code == 400 and accept.get_json()["error"]["code"] == "med_case_not_open"
    types = [t for t, _ in d.case_events(app, case["id"])]
    assert types == ["med_case.created", "med_case.updated"]


def test_accept_is_final_and_lost(app, client, shop, charge):
    case = d.opened(client, shop, charge["id"])
    held = available(client, shop)
    response = d.call(client, shop.api_key, "POST", f"/v1/med/cases/{case['id']}/accept")
    assert response.status_code == 200
    body = response.get_json()
    assert (body["status"], body["money_outcome"]) == ("accepted", "lost")
    assert body["closed_at"] is not None
    assert available(client, shop) == held  # stays debited
    assert _balance(client, shop)["retained"] == 0  # sent to the payer, no longer held
    assert _charge(client, shop, charge["id"])["status"] == "disputed"
    assert _postings(app, case["id"]) == ["dispute_hold", "dispute_loss"]
    events = d.case_events(app, case["id"])
    assert [t for t, _ in events] == ["med_case.created", "med_case.updated", "med.resolved"]
    assert events[-1][1]["money_outcome"] == "lost"
    assert events[-1][1]["object"]["status"] == "accepted"
    for path in ["accept", "appeal"]:
        again = d.call(
            client,
            shop.api_key,
            "POST",
            f"/v1/med/cases/{case['id']}/{path}",
            json={"reason": "x" * 9},
        )
        assert again.status_code == 400
    assert d.decide(client, shop.api_key, case["id"], "refunded_to_merchant").status_code == 409
    _ledger_clean(app)


@pytest.mark.parametrize(
    ("decision", "status", "returned", "charge_status", "kinds"),
    [
        ("rejected", "rejected", False, "disputed", ["dispute_hold", "dispute_loss"]),
        ("refunded_to_merchant", "closed", True, "paid", ["dispute_hold", "dispute_release"]),
        ("closed_without_refund", "closed", False, "disputed", ["dispute_hold", "dispute_loss"]),
    ],
)
@pytest.mark.parametrize("appealed", [False, True])
def test_decisions_move_the_held_money(
    app, client, shop, charge, decision, status, returned, charge_status, kinds, appealed
):
    before = available(client, shop)
    case = d.opened(client, shop, charge["id"])
    if appealed:
        path = f"/v1/med/cases/{case['id']}/appeal"
        assert (
            d.call(client, shop.api_key, "POST", path, json={"reason": "Contesto"}).status_code
            == 200
        )
    response = d.decide(client, shop.api_key, case["id"], decision)
    assert response.status_code == 200
    body = response.get_json()
    outcome = "lost" if decision == "rejected" else decision
    assert (body["status"], body["money_outcome"]) == (status, outcome)
    assert body["closed_at"] is not None
    assert available(client, shop) == (before if returned else before - d.AMOUNT)
    assert _balance(client, shop)["retained"] == 0
    after = _charge(client, shop, charge["id"])
    assert after["status"] == charge_status
    assert after["metadata"]["med"]["status"] == "closed"
    assert after["metadata"]["med"]["result"] == ("disagreed" if returned else "agreed")
    assert _postings(app, case["id"]) == kinds
    events = d.case_events(app, case["id"])
    resolved = [data for t, data in events if t == "med.resolved"]
    assert [data["money_outcome"] for data in resolved] == [outcome]
    assert _charge_events(app, charge["id"]) == ["charge.created", "charge.paid"]
    _ledger_clean(app)


def test_no_charge_event_is_recorded_because_of_a_dispute(app, client, shop, charge):
    before = charges.event_types(app, charge["id"])
    case = d.opened(client, shop, charge["id"])
    d.decide(client, shop.api_key, case["id"], "refunded_to_merchant")
    after = charges.event_types(app, charge["id"])
    added = list(after)
    for name in before:
        added.remove(name)
    assert added == ["payment.failed"]  # the legacy family reports DISPUTE; nothing on return


def test_outcome_notices_can_be_switched_off(app, client, shop, charge, monkeypatch):
    monkeypatch.setitem(app.config, "DISPUTE_OUTCOME_EVENTS", False)
    case = d.opened(client, shop, charge["id"])
    path = f"/v1/med/cases/{case['id']}/appeal"
    d.call(client, shop.api_key, "POST", path, json={"reason": "Contesto"})
    d.decide(client, shop.api_key, case["id"], "rejected")
    types = [t for t, _ in d.case_events(app, case["id"])]
    assert types == ["med_case.created", "med_case.updated"]  # appeal yes, outcome no
    assert (
        d.call(client, shop.api_key, "GET", f"/v1/med/cases/{case['id']}").get_json()[
            "money_outcome"
        ]
        == "lost"
    )


def test_evidence_request_is_an_update(app, client, shop, charge):
    case = d.opened(client, shop, charge["id"])
    path = f"/v1/sandbox/med/cases/{case['id']}/request-evidence"
    response = d.call(client, shop.api_key, "POST", path)
    assert response.status_code == 200 and response.get_json()["evidence_requested_at"]
    events = d.case_events(app, case["id"])
    assert events[-1][0] == "med_case.updated"
    assert events[-1][1]["object"]["evidence_requested_at"] is not None
    d.decide(client, shop.api_key, case["id"], "rejected")
    assert d.call(client, shop.api_key, "POST", path).status_code == 409


def test_refund_of_a_disputed_charge_is_refused(app, client, shop, charge):
    d.opened(client, shop, charge["id"])
    response = refund(client, shop.api_key, charge["id"], amount=100)
    assert response.status_code == 409
    assert response.get_json()["error"]["code"] == "charge_disputed"


def test_a_refund_finished_during_the_dispute_makes_a_won_charge_refunded(app, redis, client, shop):
    payment = paid(app, redis, client, shop.api_key)
    release(app)
    response = refund(client, shop.api_key, payment["id"], strategy="devolution")
    assert response.status_code == 201
    case = d.opened(client, shop, payment["id"])  # before the provider confirms the refund
    submit_and_poll(app, redis)
    assert _charge(client, shop, payment["id"])["status"] == "disputed"
    d.decide(client, shop.api_key, case["id"], "refunded_to_merchant")
    assert _charge(client, shop, payment["id"])["status"] == "refunded"
    assert available(client, shop) == 0
    _ledger_clean(app)


@pytest.mark.parametrize("kind", ["dispute", "med", "fraud"])
def test_a_card_dispute_returns_to_approved(app, redis, client, shop, kind):
    payment = paid(app, redis, client, shop.api_key, method="CREDIT_CARD")
    release(app)
    case = d.opened(client, shop, payment["id"], type=kind)
    status = client.get(f"/v1/payments/{payment['id']}", headers={"apikey": shop.api_key})
    assert status.get_json()["status"] == "DISPUTE"
    d.decide(client, shop.api_key, case["id"], "refunded_to_merchant")
    status = client.get(f"/v1/payments/{payment['id']}", headers={"apikey": shop.api_key})
    assert status.get_json()["status"] == "APPROVED"


def test_a_card_chargeback_is_a_chargeback_and_returns_to_approved(app, redis, client, shop):
    payment = paid(app, redis, client, shop.api_key, method="CREDIT_CARD")
    release(app)
    case = d.opened(client, shop, payment["id"], type="chargeback")
    status = client.get(f"/v1/payments/{payment['id']}", headers={"apikey": shop.api_key})
    assert status.get_json()["status"] == "CHARGEBACK"
    d.decide(client, shop.api_key, case["id"], "refunded_to_merchant")
    status = client.get(f"/v1/payments/{payment['id']}", headers={"apikey": shop.api_key})
    assert status.get_json()["status"] == "APPROVED"
    _ledger_clean(app)


def test_decisions_are_for_test_mode_cases_of_the_caller(app, client, shop, charge):
    case = d.opened(client, shop, charge["id"])
    other = factories.make_api_key(app, factories.make_account(app))
    assert d.decide(client, other, case["id"], "rejected").status_code == 404
    bad = d.decide(client, shop.api_key, case["id"], "won")
    assert bad.status_code == 400
    assert bad.get_json()["error"]["details"][0]["param"] == "decision"


@pytest.mark.postgres
def test_simultaneous_deliveries_of_one_notification_open_one_case(
    app, client, shop, charge, is_postgres
):
    """On PostgreSQL: eight deliveries of the same notification at once. The transaction's
    row lock makes each wait for the one before, which then finds its case: one 201, seven
    200 with the same case, one hold."""
    if not is_postgres:
        pytest.skip("row locks and real concurrency need PostgreSQL")
    before = available(client, shop)
    deliveries = 8
    start = threading.Barrier(deliveries)

    def deliver(_):
        with app.test_client() as http:
            start.wait()
            response = d.dispute(http, shop.api_key, charge["id"], external_id="inf-42")
            return response.status_code, response.get_json()["id"]

    with ThreadPoolExecutor(max_workers=deliveries) as pool:
        results = list(pool.map(deliver, range(deliveries)))
    assert sorted(status for status, _ in results) == [200] * 7 + [201]
    assert len({case_id for _, case_id in results}) == 1
    assert available(client, shop) == before - d.AMOUNT
    assert _postings(app, results[0][1]) == ["dispute_hold"]
    _ledger_clean(app)


@pytest.mark.postgres
def test_simultaneous_appeal_and_accept_only_one_applies(app, client, shop, charge, is_postgres):
    if not is_postgres:
        pytest.skip("row locks and real concurrency need PostgreSQL")
    case = d.opened(client, shop, charge["id"])
    start = threading.Barrier(2)

    def answer(action):
        with app.test_client() as http:
            start.wait()
            body = {"reason": "Contesto"} if action == "appeal" else None
            path = f"/v1/med/cases/{case['id']}/{action}"
            return d.call(http, shop.api_key, "POST", path, json=body).status_code

    with ThreadPoolExecutor(max_workers=2) as pool:
        statuses = list(pool.map(answer, ["appeal", "accept"]))
    assert sorted(statuses) == [200, 400]
    final = d.call(client, shop.api_key, "GET", f"/v1/med/cases/{case['id']}").get_json()
    events = [t for t, _ in d.case_events(app, case["id"])]
    if final["status"] == "appealed":
        assert events == ["med_case.created", "med_case.updated"]
    else:
        assert final["money_outcome"] == "lost"
        assert events == ["med_case.created", "med_case.updated", "med.resolved"]
    _ledger_clean(app)
