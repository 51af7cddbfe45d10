"""Refunds on the payment routes: request (wallet debit), submit job, polling job to REFUNDED
or FAILED, Pix strategies, the rules that refuse a refund, idempotency and the list."""

import threading
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta

import pytest
import sqlalchemy as sa
from redis.exceptions import ConnectionError as RedisConnectionError

from app.errors import InvalidRequest
from app.extensions import db
from app.models import (
    KeyMode,
    LedgerPosting,
    RefundStatus,
    RefundStrategy,
    TransactionStatus,
)
from app.models.base import utcnow
from app.pix import keys
from app.providers.base import ProviderError, ProviderRefused
from app.providers.sandbox import FAILING_AMOUNT, SandboxProvider
from app.services.simulated_payer import SANDBOX_PAYER_CPF
from app.services.transactions import pix_payments
from app.services.transactions.refund_submission import (
    MAX_SUBMIT_ATTEMPTS,
    MAX_SUBMIT_BACKOFF,
    SUBMIT_GRACE,
    submit_backoff,
)
from app.services.transactions.refunds import RefundOrder, request_refund
from tests.support import charges, factories
from tests.support.http import assert_error
from tests.support.payments import finalised, refund
from tests.support.payouts import run_jobs
from tests.support.refunds import (
    PIX_PAYOUT_FEE,
    assert_ledger_clean,
    available,
    events_of,
    fund,
    list_refunds,
    paid_payment,
    poll,
    refund_row,
    refund_rows,
    refunded,
    release,
    submit_and_poll,
    transaction_row,
    update_refund,
    update_transaction,
)
from tests.support.refunds import merchant as make_merchant

REFUND_KEYS = {
    "id",
    "transactionId",
    "amount",
    "currency",
    "status",
    "reason",
    "pendingReason",
    "createdAt",
}
FLOAT = 1_000_000  # spare balance, so only the refund rules (not the wallet) can refuse


@pytest.fixture
def merchant(app, monkeypatch):
    return make_merchant(app, monkeypatch)


def _refund_postings(app, refund_id) -> list[str]:
    with app.app_context():
        return sorted(
            db.session.scalars(
                sa.select(LedgerPosting.kind).where(LedgerPosting.reference_id == refund_id)
            )
        )


def _status(client, merchant, payment_id) -> str:
    return client.get(
        f"/v1/payments/{payment_id}", headers={"apikey": merchant.api_key}
    ).get_json()["status"]


# Full and partial refunds through the jobs


def test_a_full_refund_debits_at_once_then_the_jobs_take_it_to_refunded(
    app, client, redis, merchant
):
    payment = paid_payment(app, redis, client, merchant, amount=25_000)
    assert available(client, merchant) == 25_000

    response = refund(client, merchant.api_key, payment["id"], reason="Pedido cancelado")
    assert response.status_code == 201, response.get_json()
    body = response.get_json()
    assert set(body) == REFUND_KEYS
    assert body["transactionId"] == payment["id"]
    assert (body["amount"], body["currency"], body["status"]) == (25_000, "BRL", "PENDING")
    assert body["reason"] == "Pedido cancelado"
    assert available(client, merchant) == 0
    assert _refund_postings(app, body["id"]) == ["refund_debit"]
    assert_ledger_clean(app)

    run_jobs(app, redis)  # the submit job enqueued after the request committed
    assert refund_row(app, body["id"]).status is RefundStatus.IN_PROGRESS
    assert _status(client, merchant, payment["id"]) == "PAID"
    assert_ledger_clean(app)

    assert poll(app) == 1
    (listed,) = list_refunds(client, merchant, payment["id"]).get_json()["data"]
    assert listed == body | {"status": "REFUNDED"}
    assert _status(client, merchant, payment["id"]) == "REFUNDED"
    charge = charges.get(client, merchant.api_key, f"ch_{payment['id']}").get_json()
    assert charge["status"] == "refunded"
    assert available(client, merchant) == 0
    assert _refund_postings(app, body["id"]) == ["refund_completion", "refund_debit"]
    (event,) = events_of(app, payment["id"], "payment.refunded")
    assert event["transactionId"] == payment["id"]
    assert (event["status"], event["previousStatus"]) == ("REFUNDED", "PAID")
    assert (event["refundId"], event["refundAmount"], event["refundedAmount"]) == (
        body["id"],
        25_000,
        25_000,
    )
    assert event["amount"] == 25_000 and event["occurredAt"]
    assert_ledger_clean(app)

    assert poll(app) == 0  # nothing left to act on
    assert len(events_of(app, payment["id"], "payment.refunded")) == 1


def test_partial_refunds_leave_it_paid_and_the_one_that_completes_the_amount_refunds_it(
    app, client, redis, merchant
):
    payment = paid_payment(app, redis, client, merchant, amount=30_000)
    fund(app, client, merchant, FLOAT)

    for amount, refunded_so_far in ((10_000, 10_000), (5_000, 15_000)):
        refunded(client, merchant, payment["id"], amount=amount)
        submit_and_poll(app, redis)
        assert _status(client, merchant, payment["id"]) == "PAID"
        event = events_of(app, payment["id"], "payment.refunded")[-1]
        assert (event["status"], event["previousStatus"]) == ("PAID", "PAID")
        assert (event["refundAmount"], event["refundedAmount"]) == (amount, refunded_so_far)
        assert_ledger_clean(app)
    assert len(events_of(app, payment["id"], "payment.refunded")) == 2

    before = available(client, merchant)
    response = refund(client, merchant.api_key, payment["id"], amount=15_001)
    assert_error(
        response, 400, "invalid_request_error", "refund_exceeds_refundable", param="amount"
    )
    assert available(client, merchant) == before
    assert len(refund_rows(app, payment["id"])) == 2

    rest = refunded(client, merchant, payment["id"])  # amount omitted: what remains
    assert rest["amount"] == 15_000
    submit_and_poll(app, redis)
    assert _status(client, merchant, payment["id"]) == "REFUNDED"
    last = events_of(app, payment["id"], "payment.refunded")[-1]
    assert (last["status"], last["previousStatus"]) == ("REFUNDED", "PAID")
    assert (last["refundId"], last["refundedAmount"]) == (rest["id"], 30_000)
    assert available(client, merchant) == before - 15_000
    assert_ledger_clean(app)

    response = refund(client, merchant.api_key, payment["id"], amount=1)
    assert_error(response, 409, "conflict_error", "transaction_not_refundable")


@pytest.mark.parametrize("amount", [30_001, 10**12])
def test_an_over_refund_is_refused_and_debits_nothing(app, client, redis, merchant, amount):
    payment = paid_payment(app, redis, client, merchant, amount=30_000)
    fund(app, client, merchant, FLOAT)
    before = available(client, merchant)
    response = refund(client, merchant.api_key, payment["id"], amount=amount)
    assert_error(
        response, 400, "invalid_request_error", "refund_exceeds_refundable", param="amount"
    )
    assert available(client, merchant) == before
    assert refund_rows(app, payment["id"]) == []
    assert_ledger_clean(app)


def test_refunds_still_in_flight_count_against_what_remains(app, client, redis, merchant):
    payment = paid_payment(app, redis, client, merchant, amount=30_000)
    fund(app, client, merchant, FLOAT)
    refunded(client, merchant, payment["id"], amount=20_000)  # PENDING, job not run yet
    response = refund(client, merchant.api_key, payment["id"], amount=10_001)
    assert_error(response, 400, "invalid_request_error", "refund_exceeds_refundable")
    run_jobs(app, redis)  # IN_PROGRESS
    assert refunded(client, merchant, payment["id"])["amount"] == 10_000


@pytest.mark.postgres
def test_concurrent_refunds_over_the_amount_pass_only_up_to_it(
    app, client, redis, merchant, is_postgres
):
    """On PostgreSQL: twelve simultaneous refunds of 70,00 on a 300,00 payment; four pass.

    The wallet holds far more than the payment (FLOAT), so the balance check never refuses
    and the wallet's own row lock is not what saves us. The refund reads what was already
    refunded *before* it debits; without the transaction's row lock (SELECT … FOR UPDATE in
    `request_refund`) every request reads "nothing refunded yet" while the others are still
    uncommitted, and they would all pass (12 x 70,00 = 840,00 refunded). With the lock each
    waits for the one before to commit, then (READ COMMITTED, new statement) sees its refund.
    """
    if not is_postgres:
        pytest.skip("row locks and real concurrency need PostgreSQL")
    payment = paid_payment(app, redis, client, merchant, amount=30_000)
    fund(app, client, merchant, FLOAT)
    before = available(client, merchant)
    requests = 12
    start = threading.Barrier(requests)

    def send(_):
        with app.test_client() as http:
            start.wait()  # all at once, each a separate HTTP request with its own key
            response = refund(http, merchant.api_key, payment["id"], amount=7_000)
            return response.status_code, response.get_json()

    with ThreadPoolExecutor(max_workers=requests) as pool:
        results = list(pool.map(send, range(requests)))
    accepted = [body for status, body in results if status == 201]
    refused = [body for status, body in results if status == 400]
    assert len(accepted) == 4 and len(refused) == 8, results
    assert {b["error"]["code"] for b in refused} == {"refund_exceeds_refundable"}
    rows = refund_rows(app, payment["id"])
    assert sorted(r.id for r in rows) == sorted(b["id"] for b in accepted)
    assert sum(r.amount for r in rows) == 28_000 <= payment["amount"]
    assert available(client, merchant) == before - 28_000
    assert_ledger_clean(app)
    submit_and_poll(app, redis)
    assert _status(client, merchant, payment["id"]) == "PAID"
    assert_ledger_clean(app)


# FAILED: the provider or the payer's bank refuses


@pytest.mark.parametrize("pass_fee", [False, True])
def test_a_failed_refund_returns_everything_and_leaves_the_transaction_paid(
    app, client, redis, merchant, pass_fee
):
    """R$ 503,00 makes the sandbox's payer bank refuse the refund on the poll."""
    payment = paid_payment(app, redis, client, merchant, amount=100_000)
    before = available(client, merchant)
    body = refunded(
        client, merchant, payment["id"], amount=FAILING_AMOUNT, passFeeToTenant=pass_fee
    )
    fee = PIX_PAYOUT_FEE if pass_fee else 0
    assert available(client, merchant) == before - FAILING_AMOUNT - fee
    run_jobs(app, redis)
    assert refund_row(app, body["id"]).status is RefundStatus.IN_PROGRESS

    assert poll(app) == 1
    row = refund_row(app, body["id"])
    assert row.status is RefundStatus.FAILED
    assert "503,00" in row.failure_reason
    assert available(client, merchant) == before
    assert _status(client, merchant, payment["id"]) == "PAID"
    assert events_of(app, payment["id"], "payment.refunded") == []
    assert _refund_postings(app, body["id"]) == ["refund_debit", "refund_reversal"]
    (listed,) = list_refunds(client, merchant, payment["id"]).get_json()["data"]
    assert listed["status"] == "FAILED"
    assert_ledger_clean(app)

    # A failed refund no longer counts: the whole amount is refundable again.
    assert refunded(client, merchant, payment["id"])["amount"] == 100_000


def test_a_refund_whose_submission_has_an_unknown_outcome_stays_debited_and_pending(
    app, client, redis, merchant, monkeypatch
):
    """A timeout may hide a refund the provider made: the money stays out of the wallet and
    the same refund id is offered again, never reversed on a guess."""
    tries = []

    def unavailable(self, request):
        tries.append(request.reference)
        raise ProviderError("Sandbox: provider unavailable.", code="unavailable")

    monkeypatch.setattr(SandboxProvider, "refund", unavailable)
    payment = paid_payment(app, redis, client, merchant, amount=20_000)
    fund(app, client, merchant, FLOAT)
    before = available(client, merchant)
    body = refunded(client, merchant, payment["id"], passFeeToTenant=True)
    assert available(client, merchant) == before - 20_000 - PIX_PAYOUT_FEE

    run_jobs(app, redis)
    row = refund_row(app, body["id"])
    assert (row.status, row.submit_attempts) == (RefundStatus.PENDING, 1)
    assert poll(app) == 0  # just tried: left alone within the grace

    for attempt in range(2, MAX_SUBMIT_ATTEMPTS + 2):
        wait = submit_backoff(attempt - 1)  # twice as long after each failure
        assert wait == min(SUBMIT_GRACE * 2 ** (attempt - 1), MAX_SUBMIT_BACKOFF)
        update_refund(app, body["id"], updated_at=utcnow() - wait + timedelta(seconds=5))
        assert poll(app) == 0  # still backing off
        update_refund(app, body["id"], updated_at=utcnow() - wait - timedelta(seconds=1))
        assert poll(app) == 1
        row = refund_row(app, body["id"])
        assert (row.status, row.submit_attempts) == (RefundStatus.PENDING, attempt)
        assert available(client, merchant) == before - 20_000 - PIX_PAYOUT_FEE
        assert_ledger_clean(app)
    assert tries == [body["id"]] * (MAX_SUBMIT_ATTEMPTS + 1)  # our id: retries are idempotent
    assert events_of(app, payment["id"], "payment.refunded") == []


def test_a_refund_the_provider_refuses_fails_with_the_money_back(
    app, client, redis, merchant, monkeypatch
):
    def refuse(self, request):
        raise ProviderRefused("Sandbox: refunds are closed for this payment.", code="refused")

    monkeypatch.setattr(SandboxProvider, "refund", refuse)
    payment = paid_payment(app, redis, client, merchant, amount=20_000)
    fund(app, client, merchant, FLOAT)
    before = available(client, merchant)
    body = refunded(client, merchant, payment["id"], passFeeToTenant=True)
    run_jobs(app, redis)
    row = refund_row(app, body["id"])
    assert row.status is RefundStatus.FAILED
    assert "refunds are closed" in row.failure_reason
    assert available(client, merchant) == before
    assert _status(client, merchant, payment["id"]) == "PAID"
    assert events_of(app, payment["id"], "payment.refunded") == []
    assert_ledger_clean(app)


def test_a_status_the_provider_cannot_give_leaves_the_refund_in_progress(
    app, client, redis, merchant, monkeypatch
):
    payment = paid_payment(app, redis, client, merchant, amount=20_000)
    fund(app, client, merchant, FLOAT)
    body = refunded(client, merchant, payment["id"])
    run_jobs(app, redis)
    with monkeypatch.context() as patch:
        patch.setattr(
            SandboxProvider,
            "refund_status",
            lambda self, ref: (_ for _ in ()).throw(ProviderError("down", code="down")),
        )
        assert poll(app) == 1
    row = refund_row(app, body["id"])
    assert row.status is RefundStatus.IN_PROGRESS
    assert poll(app) == 1
    assert refund_row(app, body["id"]).status is RefundStatus.REFUNDED


def test_a_pending_refund_whose_submit_failed_is_completed_by_the_poll_once_the_provider_is_back(
    app, client, redis, merchant, monkeypatch
):
    payment = paid_payment(app, redis, client, merchant, amount=20_000)
    with monkeypatch.context() as patch:
        patch.setattr(
            SandboxProvider,
            "refund",
            lambda self, request: (_ for _ in ()).throw(ProviderError("down", code="down")),
        )
        body = refunded(client, merchant, payment["id"])
        run_jobs(app, redis)
    assert refund_row(app, body["id"]).status is RefundStatus.PENDING
    update_refund(app, body["id"], updated_at=utcnow() - submit_backoff(1) - timedelta(seconds=1))
    assert poll(app) == 1  # submitted, then polled in the same run
    assert refund_row(app, body["id"]).status is RefundStatus.REFUNDED
    assert _status(client, merchant, payment["id"]) == "REFUNDED"
    assert_ledger_clean(app)


def test_a_refund_whose_job_was_never_enqueued_is_submitted_by_the_poll_after_the_grace(
    app, client, redis, merchant, monkeypatch
):
    """Redis down at the commit: the request still stands, and the cron job catches it up."""
    payment = paid_payment(app, redis, client, merchant, amount=20_000)

    def redis_is_down(_name):
        raise RedisConnectionError("Connection refused")

    with monkeypatch.context() as patch:
        patch.setattr("app.queueing.get_queue", redis_is_down)
        body = refunded(client, merchant, payment["id"])
    run_jobs(app, redis)  # nothing was queued
    assert refund_row(app, body["id"]).status is RefundStatus.PENDING
    assert poll(app) == 0  # a fresh request is left to its own job
    update_refund(app, body["id"], updated_at=utcnow() - SUBMIT_GRACE - timedelta(seconds=1))
    assert poll(app) == 1
    row = refund_row(app, body["id"])
    assert (row.status, row.submit_attempts) == (RefundStatus.REFUNDED, 0)
    assert _status(client, merchant, payment["id"]) == "REFUNDED"
    assert_ledger_clean(app)


def test_a_failing_status_poll_keeps_the_submission_the_same_run_made(
    app, client, redis, merchant, monkeypatch
):
    """The poll submits a straggler, then asks its status; when only the status call fails,
    the refund stays IN_PROGRESS with the provider's reference, not PENDING as if unsent."""
    payment = paid_payment(app, redis, client, merchant, amount=20_000)
    body = refunded(client, merchant, payment["id"])
    redis.flushdb()  # the submit job is lost
    update_refund(app, body["id"], updated_at=utcnow() - SUBMIT_GRACE - timedelta(seconds=1))
    with monkeypatch.context() as patch:

        def status_unavailable(self, reference):
            raise ProviderError("Sandbox: status unavailable.", code="unavailable")

        patch.setattr(SandboxProvider, "refund_status", status_unavailable)
        assert poll(app) == 1
    row = refund_row(app, body["id"])
    assert row.status is RefundStatus.IN_PROGRESS
    assert row.provider_reference
    assert poll(app) == 1
    assert refund_row(app, body["id"]).status is RefundStatus.REFUNDED
    assert_ledger_clean(app)


@pytest.mark.postgres
def test_pollers_racing_complete_a_refund_once(app, client, redis, merchant, is_postgres):
    """On PostgreSQL: four polling runs at once; one completes, the others find it done."""
    if not is_postgres:
        pytest.skip("row locks and real concurrency need PostgreSQL")
    payment = paid_payment(app, redis, client, merchant, amount=20_000)
    body = refunded(client, merchant, payment["id"])
    run_jobs(app, redis)
    runs = 4
    start = threading.Barrier(runs)

    def run(_):
        start.wait()
        return poll(app)

    with ThreadPoolExecutor(max_workers=runs) as pool:
        assert list(pool.map(run, range(runs))) == [1] * runs
    assert refund_row(app, body["id"]).status is RefundStatus.REFUNDED
    assert _refund_postings(app, body["id"]) == ["refund_completion", "refund_debit"]
    assert len(events_of(app, payment["id"], "payment.refunded")) == 1
    assert _status(client, merchant, payment["id"]) == "REFUNDED"
    assert_ledger_clean(app)


# Pix strategies


def test_a_devolution_goes_back_by_the_end_to_end_id(app, client, redis, merchant):
    payment = paid_payment(app, redis, client, merchant, amount=20_000)
    body = refunded(client, merchant, payment["id"], amount=5_000, strategy="devolution")
    row = refund_row(app, body["id"])
    end_to_end_id = transaction_row(app, payment["id"]).end_to_end_id
    assert end_to_end_id
    assert (row.strategy, row.end_to_end_id) == (RefundStrategy.DEVOLUTION, end_to_end_id)
    assert (row.destination_key, row.fee) == (None, 0)
    assert available(client, merchant) == 15_000
    submit_and_poll(app, redis)
    assert refund_row(app, body["id"]).status is RefundStatus.REFUNDED
    assert_ledger_clean(app)


@pytest.mark.parametrize(
    ("extra", "param"),
    [
        ({"destinationKey": "ana@example.com"}, "destinationKey"),
        ({"passFeeToTenant": True}, "passFeeToTenant"),
    ],
)
def test_a_devolution_takes_no_cashout_options(app, client, redis, merchant, extra, param):
    payment = paid_payment(app, redis, client, merchant, amount=20_000)
    response = refund(client, merchant.api_key, payment["id"], strategy="devolution", **extra)
    assert_error(response, 400, "invalid_request_error", "invalid_request", param=param)
    assert available(client, merchant) == 20_000
    assert refund_rows(app, payment["id"]) == []


def test_a_devolution_accepts_pass_fee_to_tenant_false_and_an_empty_reason(
    app, client, redis, merchant
):
    """false asks for nothing a devolution cannot give; "" is no reason at all."""
    payment = paid_payment(app, redis, client, merchant, amount=20_000)
    body = refunded(
        client, merchant, payment["id"], strategy="devolution", passFeeToTenant=False, reason=""
    )
    assert body["reason"] is None


@pytest.mark.parametrize(
    ("days", "strategy", "allowed"),
    [(89, "devolution", True), (91, "devolution", False), (91, "cashout", True)],
)
def test_a_devolution_is_possible_for_90_days_after_the_payment(
    app, client, redis, merchant, days, strategy, allowed
):
    payment = paid_payment(app, redis, client, merchant, amount=20_000)
    update_transaction(app, payment["id"], paid_at=utcnow() - timedelta(days=days))
    response = refund(client, merchant.api_key, payment["id"], strategy=strategy)
    if allowed:
        assert response.status_code == 201, response.get_json()
        return
    assert_error(response, 409, "conflict_error", "refund_window_expired", param="strategy")
    assert available(client, merchant) == 20_000


def test_a_cashout_goes_to_the_payers_document_by_default(app, client, redis, merchant):
    payment = paid_payment(app, redis, client, merchant, amount=20_000)
    body = refunded(client, merchant, payment["id"])
    row = refund_row(app, body["id"])
    assert (row.strategy, row.destination_key) == (RefundStrategy.CASHOUT, SANDBOX_PAYER_CPF)
    assert (row.end_to_end_id, row.fee, row.pass_fee_to_tenant) == (None, 0, False)
    assert available(client, merchant) == 0


def test_a_cashout_without_a_known_payer_needs_a_destination_key(app, client, merchant):
    """A Pix released from manual review was reported without the payer's document."""
    charge = charges.created(
        client,
        merchant.api_key,
        amount=15_000,
        customer={"name": "Ana Souza"},
        expected_payer_tax_id=charges.CPF,
    )
    charges.pay(client, merchant.api_key, charge["id"], payer_document=None)
    with app.app_context():
        pix_payments.release_held(charges.raw(charge["id"]), factories.make_member(app).user_id)
        db.session.commit()
    release(app)
    response = refund(client, merchant.api_key, charge["id"])
    assert_error(
        response,
        400,
        "invalid_request_error",
        "refund_destination_required",
        param="destinationKey",
    )
    assert refund_rows(app, charge["id"]) == []
    for body in ({"destinationKey": "ana@example.com"}, {"strategy": "devolution"}):
        assert refunded(client, merchant, charge["id"], amount=5_000, **body)["amount"] == 5_000
    assert_ledger_clean(app)


@pytest.mark.parametrize("key", ["+5511987654321", "ana@example.com", "11144477735"])
def test_a_cashout_goes_to_a_valid_destination_key(app, client, redis, merchant, key):
    payment = paid_payment(app, redis, client, merchant, amount=20_000)
    body = refunded(client, merchant, payment["id"], strategy="cashout", destinationKey=key)
    assert refund_row(app, body["id"]).destination_key == keys.validate(key).normalised


@pytest.mark.parametrize("key", ["not a key", "123", "11144477734", "ana@"])
def test_an_invalid_destination_key_is_refused(app, client, redis, merchant, key):
    payment = paid_payment(app, redis, client, merchant, amount=20_000)
    response = refund(client, merchant.api_key, payment["id"], destinationKey=key)
    assert_error(response, 400, "invalid_request_error", "invalid_pix_key", param="destinationKey")
    assert refund_rows(app, payment["id"]) == []
    assert available(client, merchant) == 20_000


def test_pass_fee_to_tenant_debits_the_pix_out_fee_too(app, client, redis, merchant):
    payment = paid_payment(app, redis, client, merchant, amount=20_000)
    fund(app, client, merchant, FLOAT)
    before = available(client, merchant)
    body = refunded(client, merchant, payment["id"], amount=8_000, passFeeToTenant=True)
    row = refund_row(app, body["id"])
    assert (row.fee, row.pass_fee_to_tenant) == (PIX_PAYOUT_FEE, True)
    assert body["amount"] == 8_000  # the fee is the merchant's cost, not the payer's money
    assert available(client, merchant) == before - 8_000 - PIX_PAYOUT_FEE
    submit_and_poll(app, redis)
    assert refund_row(app, body["id"]).status is RefundStatus.REFUNDED
    assert available(client, merchant) == before - 8_000 - PIX_PAYOUT_FEE
    assert_ledger_clean(app)


# Cards and the other methods


def _card(app, redis, client, merchant, **overrides):
    return paid_payment(
        app, redis, client, merchant, method="CREDIT_CARD", currency="EUR", **overrides
    )


def test_a_card_refund_goes_through_the_same_steps(app, client, redis, merchant):
    payment = _card(app, redis, client, merchant, amount=12_000)
    assert payment["status"] == "APPROVED"
    assert available(client, merchant, "EUR") == 12_000
    body = refunded(client, merchant, payment["id"])
    assert (body["currency"], body["amount"], body["status"]) == ("EUR", 12_000, "PENDING")
    row = refund_row(app, body["id"])
    assert (row.method, row.strategy, row.destination_key) == ("CREDIT_CARD", None, None)
    assert available(client, merchant, "EUR") == 0
    submit_and_poll(app, redis)
    assert refund_row(app, body["id"]).status is RefundStatus.REFUNDED
    assert _status(client, merchant, payment["id"]) == "REFUNDED"
    (event,) = events_of(app, payment["id"], "payment.refunded")
    assert (event["status"], event["previousStatus"]) == ("REFUNDED", "APPROVED")
    assert_ledger_clean(app)


@pytest.mark.parametrize(
    "extra",
    [
        {"strategy": "cashout"},
        {"strategy": "devolution"},
        {"passFeeToTenant": False},
        {"destinationKey": "ana@example.com"},
    ],
)
def test_pix_options_on_a_card_refund_are_refused(app, client, redis, merchant, extra):
    payment = _card(app, redis, client, merchant, amount=12_000)
    response = refund(client, merchant.api_key, payment["id"], **extra)
    assert_error(response, 400, "invalid_request_error", "invalid_request")
    assert available(client, merchant, "EUR") == 12_000
    assert refund_rows(app, payment["id"]) == []


@pytest.mark.parametrize(
    ("method", "overrides"),
    [
        ("BOLETO", {}),
        ("MULTIBANCO", {"currency": "EUR"}),
        ("MBWAY", {"currency": "EUR", "metadata": {"phone": "+351912345678"}}),
        ("CRYPTO", {"currency": "USDT"}),
    ],
)
def test_methods_the_provider_cannot_refund_are_422(
    app, client, redis, merchant, method, overrides
):
    payment = paid_payment(app, redis, client, merchant, method=method, **overrides)
    assert payment["status"] == "PAID"
    currency = overrides.get("currency", "BRL")
    before = available(client, merchant, currency)
    response = refund(client, merchant.api_key, payment["id"])
    assert_error(response, 422, "invalid_request_error", "REFUND_NOT_SUPPORTED")
    assert available(client, merchant, currency) == before
    assert refund_rows(app, payment["id"]) == []


# Transactions that cannot be refunded


@pytest.mark.parametrize("status", [TransactionStatus.DISPUTE, TransactionStatus.CHARGEBACK])
def test_a_disputed_transaction_cannot_be_refunded(app, client, redis, merchant, status):
    payment = paid_payment(app, redis, client, merchant, amount=20_000)
    update_transaction(app, payment["id"], status=status)
    response = refund(client, merchant.api_key, payment["id"])
    assert_error(response, 409, "conflict_error", "charge_disputed")
    assert refund_rows(app, payment["id"]) == []
    assert available(client, merchant) == 20_000


def test_an_unpaid_transaction_cannot_be_refunded(app, client, redis, merchant):
    payment = finalised(app, redis, client, merchant.api_key)
    assert payment["status"] == "WAITING_PAYMENT"
    response = refund(client, merchant.api_key, payment["id"])
    assert_error(response, 409, "conflict_error", "transaction_not_refundable")
    assert refund_rows(app, payment["id"]) == []


def test_another_accounts_transaction_is_404_on_both_routes(app, client, redis, merchant):
    payment = paid_payment(app, redis, client, merchant, amount=20_000)
    stranger = factories.make_api_key(app, factories.make_account(app, "Outra Loja"))
    response = refund(client, stranger, payment["id"])
    assert_error(response, 404, "not_found_error", "not_found")
    response = client.get(f"/v1/payments/{payment['id']}/refunds", headers={"apikey": stranger})
    assert_error(response, 404, "not_found_error", "not_found")
    assert_error(refund(client, merchant.api_key, "missing"), 404, "not_found_error", "not_found")
    assert refund_rows(app, payment["id"]) == []


# Request validation and idempotency


MISSING = object()


@pytest.mark.parametrize("key", [MISSING, None, "", "k" * 7, "k" * 129, 12345678])
def test_the_idempotency_key_is_required_and_8_to_128_characters(app, client, redis, merchant, key):
    payment = paid_payment(app, redis, client, merchant, amount=20_000)
    body = {"amount": 1_000} | ({} if key is MISSING else {"idempotencyKey": key})
    response = client.post(
        f"/v1/payments/{payment['id']}/refund", json=body, headers={"apikey": merchant.api_key}
    )
    assert_error(response, 400, "invalid_request_error", "invalid_request", param="idempotencyKey")
    assert refund_rows(app, payment["id"]) == []
    assert available(client, merchant) == 20_000


@pytest.mark.parametrize("key", ["k" * 8, "k" * 128])
def test_idempotency_keys_of_8_and_128_characters_are_accepted(app, client, redis, merchant, key):
    payment = paid_payment(app, redis, client, merchant, amount=20_000)
    refunded(client, merchant, payment["id"], amount=1_000, idempotencyKey=key)


def test_a_replay_returns_the_same_refund_and_another_body_conflicts(app, client, redis, merchant):
    payment = paid_payment(app, redis, client, merchant, amount=20_000)
    first = refund(client, merchant.api_key, payment["id"], amount=5_000, idempotencyKey="k" * 20)
    again = refund(client, merchant.api_key, payment["id"], amount=5_000, idempotencyKey="k" * 20)
    assert (first.status_code, again.status_code) == (201, 201)
    assert again.get_json() == first.get_json()
    assert again.headers["Idempotent-Replayed"] == "true"
    assert len(refund_rows(app, payment["id"])) == 1
    assert available(client, merchant) == 15_000
    assert _refund_postings(app, first.get_json()["id"]) == ["refund_debit"]

    other = refund(client, merchant.api_key, payment["id"], amount=6_000, idempotencyKey="k" * 20)
    assert_error(other, 409, "conflict_error", "idempotency_key_reused")
    assert len(refund_rows(app, payment["id"])) == 1
    assert available(client, merchant) == 15_000
    assert_ledger_clean(app)


@pytest.mark.parametrize(
    ("body", "code", "param"),
    [
        ({"amount": 0}, "invalid_amount", "amount"),
        ({"amount": -100}, "invalid_amount", "amount"),
        ({"amount": "100"}, "invalid_amount", "amount"),
        ({"amount": 1.5}, "invalid_amount", "amount"),
        ({"reason": "x" * 501}, "invalid_request", "reason"),
        ({"strategy": "pix_out"}, "invalid_request", "strategy"),
        ({"passFeeToTenant": "yes"}, "invalid_request", "passFeeToTenant"),
    ],
)
def test_invalid_fields_are_refused(app, client, redis, merchant, body, code, param):
    payment = paid_payment(app, redis, client, merchant, amount=20_000)
    response = refund(client, merchant.api_key, payment["id"], **body)
    assert_error(response, 400, "invalid_request_error", code, param=param)
    assert refund_rows(app, payment["id"]) == []
    assert available(client, merchant) == 20_000


@pytest.mark.parametrize("amount", [0, -5_000])
def test_the_service_itself_refuses_a_non_positive_amount(app, client, redis, merchant, amount):
    """The dashboard calls the service without the API schema: a negative refund must not
    turn into a credit of the wallet."""
    payment = paid_payment(app, redis, client, merchant, amount=20_000)
    with app.app_context(), pytest.raises(InvalidRequest) as refused:
        request_refund(merchant.account_id, KeyMode.TEST, payment["id"], RefundOrder(amount))
    assert (refused.value.code, refused.value.param) == ("invalid_amount", "amount")
    assert refund_rows(app, payment["id"]) == []
    assert available(client, merchant) == 20_000
    assert_ledger_clean(app)


def test_a_reason_of_500_characters_is_kept(app, client, redis, merchant):
    payment = paid_payment(app, redis, client, merchant, amount=20_000)
    body = refunded(client, merchant, payment["id"], reason="x" * 500)
    assert body["reason"] == "x" * 500


# The list, and the ids a refund is addressed by


def test_the_list_is_newest_first_in_a_data_total_envelope(app, client, redis, merchant):
    payment = paid_payment(app, redis, client, merchant, amount=20_000)
    assert list_refunds(client, merchant, payment["id"]).get_json() == {"data": [], "total": 0}
    made = [refunded(client, merchant, payment["id"], amount=a) for a in (1_000, 2_000, 3_000)]
    response = list_refunds(client, merchant, payment["id"])
    assert response.status_code == 200
    body = response.get_json()
    assert set(body) == {"data", "total"}
    assert body["total"] == 3
    assert [r["id"] for r in body["data"]] == [r["id"] for r in reversed(made)]
    assert all(set(r) == REFUND_KEYS for r in body["data"])
    assert body["data"] == list(reversed(made))


def test_the_list_includes_the_automatic_return_of_a_payer_lock_mismatch(app, client, merchant):
    charge = charges.created(
        client,
        merchant.api_key,
        amount=15_000,
        customer={"name": "Ana Souza"},
        expected_payer_tax_id=charges.CPF,
    )
    paid = charges.pay(client, merchant.api_key, charge["id"], payer_document=charges.OTHER_CPF)
    assert paid.get_json()["status"] == "refunded"
    for payment_id in (charge["id"], charges.raw(charge["id"])):
        body = list_refunds(client, merchant, payment_id).get_json()
        assert body["total"] == 1
        (automatic,) = body["data"]
        assert set(automatic) == REFUND_KEYS
        assert automatic["transactionId"] == charge["id"]
        assert (automatic["amount"], automatic["status"]) == (15_000, "REFUNDED")
    # already refunded by the bank: nothing left for the merchant to refund
    response = refund(client, merchant.api_key, charge["id"])
    assert_error(response, 409, "conflict_error", "transaction_not_refundable")


@pytest.mark.parametrize("prefixed", [True, False])
def test_a_charge_is_refunded_by_its_ch_or_raw_id_and_answers_with_its_ch_id(
    app, client, redis, merchant, prefixed
):
    charge = charges.created(client, merchant.api_key, amount=15_000)
    charges.pay(client, merchant.api_key, charge["id"])
    release(app)
    address = charge["id"] if prefixed else charges.raw(charge["id"])
    body = refunded(client, merchant, address)
    assert body["transactionId"] == charge["id"]
    (listed,) = list_refunds(client, merchant, address).get_json()["data"]
    assert listed == body
    submit_and_poll(app, redis)
    assert charges.get(client, merchant.api_key, charge["id"]).get_json()["status"] == "refunded"
    (event,) = events_of(app, charge["id"], "payment.refunded")
    assert event["transactionId"] == charge["id"]
    assert_ledger_clean(app)
