"""Refunds at the provider: handing a funded one over (`submit`), asking where one in progress
stands (`poll`), and which are due for either (`due_refunds`).

A job submits a funded refund right after it commits; an `rq cron` job funds waiting ones
(`refund_funding`), submits any whose job never ran and polls the provider for the ones in
progress. It also polls the automatic Pix returns in progress (`pix_payments`), which it
moves by status alone: they hold none of the merchant's money, so they post nothing.
"""

import logging
from datetime import datetime, timedelta

import sqlalchemy as sa

from app.extensions import db
from app.formats.payments import payment_event_data, refund_event_data
from app.marks import translatable
from app.models import (
    SETTLED_STATUSES,
    LedgerAccount,
    Refund,
    RefundStatus,
    Transaction,
    TransactionStatus,
)
from app.models.base import utcnow
from app.providers import provider_named
from app.providers.base import ProviderError, ProviderRefused, RefundRequest, RefundStatusRequest
from app.retries import backoff
from app.services import dispute_holds
from app.services.events import record_event
from app.services.ledger import Line
from app.services.transactions import lifecycle, pix_payments, refund_funding, refund_states
from app.services.transactions.refund_totals import refunded_total

log = logging.getLogger(__name__)
S = TransactionStatus
R = RefundStatus
MAX_SUBMIT_ATTEMPTS = 5
SUBMIT_GRACE = timedelta(seconds=30)  # a refund's own job normally runs well within this
# A provider that failed to answer is asked again after SUBMIT_GRACE, then twice as long after
# each further failure, at most every MAX_SUBMIT_BACKOFF.
MAX_SUBMIT_BACKOFF = timedelta(hours=1)


def submit(refund_id: str) -> Refund | None:
    """Hand a funded PENDING refund to the provider (idempotent by our refund id). A refusal
    turns it FAILED, with the money back; an error of unknown outcome (a timeout: the
    provider may have sent the money) leaves it PENDING, asked again by the polling job with
    the same reference, and is reported once it has failed `MAX_SUBMIT_ATTEMPTS`."""
    refund, payment = refund_funding.lock(refund_id)
    if refund is None or refund.status is not R.PENDING or refund.automatic:
        return refund  # automatic returns are sent by `pix_payments` as they are decided
    if refund.pending_reason is not None:
        return refund  # waiting for money: `refund_funding.fund` queues it once funded
    provider = provider_named(payment.provider, payment.mode)
    try:
        refund.provider_reference = provider.refund(
            RefundRequest(
                reference=refund.id,
                method=refund.method,
                strategy=refund.strategy.value if refund.strategy else None,
                amount=refund.amount,
                currency=refund.currency,
                payment_reference=payment.provider_references.get(refund.method),
                end_to_end_id=refund.end_to_end_id,
                destination_key=refund.destination_key,
            )
        )
    except ProviderRefused as error:
        refund_funding.fail_funded(
            refund, payment, f"The provider refused the refund: {error.message}"
        )
        return refund
    except ProviderError as error:
        refund.submit_attempts += 1
        refund.updated_at = utcnow()
        if refund.submit_attempts >= MAX_SUBMIT_ATTEMPTS:
            log.error(
                "refund still not accepted by the provider; reconcile with it",
                extra={"id": refund.id, "attempts": refund.submit_attempts, "error": error.code},
            )
        return refund
    refund_states.move(refund, R.IN_PROGRESS)
    return refund


def poll(refund_id: str) -> Refund | None:
    """Ask the provider where an IN_PROGRESS refund stands and apply the answer (to an
    automatic return, its status alone)."""
    refund, payment = refund_funding.lock(refund_id)
    if refund is None or refund.status is not R.IN_PROGRESS:
        return refund
    provider = provider_named(payment.provider, payment.mode)
    refund.updated_at = utcnow()  # polled now: the others come first next time
    try:
        state = provider.refund_status(
            RefundStatusRequest(refund.provider_reference, refund.amount)
        )
    except ProviderError as error:
        log.warning("refund status unavailable", extra={"id": refund.id, "error": error.code})
        return refund
    if refund.automatic:
        pix_payments.settle_return(refund, R(state.status), failure_reason=state.failure_reason)
    elif state.status == R.REFUNDED:
        _complete(refund, payment)
    elif state.status == R.FAILED:
        refund_funding.fail_funded(
            refund,
            payment,
            state.failure_reason or translatable("The provider could not refund the payer."),
        )
    return refund


def due_refunds(now: datetime | None = None, limit: int = 200) -> list[str]:
    """Refunds the polling job should act on: merchant refunds in progress, or funded and
    pending past their job and their backoff after failed submissions, and automatic returns
    in progress at the provider (a lost settlement webhook would otherwise leave them so for
    ever)."""
    merchant_refund = sa.and_(
        Refund.automatic.is_(False),
        sa.or_(Refund.status == R.IN_PROGRESS, _due_for_submission(now or utcnow())),
    )
    automatic_return = sa.and_(
        Refund.automatic.is_(True),
        Refund.status == R.IN_PROGRESS,
        Refund.provider_reference.is_not(None),
    )
    return list(
        db.session.scalars(
            sa.select(Refund.id)
            .where(sa.or_(merchant_refund, automatic_return))
            .order_by(Refund.updated_at)
            .limit(limit)
        )
    )


def submit_backoff(attempts: int) -> timedelta:
    """How long a PENDING refund waits before the next submission, after `attempts` failed."""
    # Unjittered: `_due_for_submission` turns these waits into fixed SQL thresholds.
    return backoff(attempts, SUBMIT_GRACE, MAX_SUBMIT_BACKOFF, jitter=0)


def _due_for_submission(now: datetime) -> sa.ColumnElement[bool]:
    """Funded PENDING refunds whose wait (`submit_backoff` of their failed attempts) is over."""
    capped = next(n for n in range(64) if submit_backoff(n) == MAX_SUBMIT_BACKOFF)
    waits = [
        sa.and_(Refund.submit_attempts == n, Refund.updated_at <= now - submit_backoff(n))
        for n in range(capped)
    ]
    waits.append(
        sa.and_(Refund.submit_attempts >= capped, Refund.updated_at <= now - MAX_SUBMIT_BACKOFF)
    )
    return sa.and_(Refund.status == R.PENDING, Refund.pending_reason.is_(None), sa.or_(*waits))


def _complete(refund: Refund, payment: Transaction) -> None:
    """REFUNDED: the money leaves; an undecided dispute releases what it no longer risks;
    the transaction is REFUNDED once refunds cover it all."""
    now = utcnow()
    refund_states.move(refund, R.REFUNDED, now)
    refund.completed_at = now
    refund_funding.post(
        refund,
        refund_funding.COMPLETION,
        "Refund sent",
        [
            Line(LedgerAccount.REFUND_CLEARING, -refund.amount),
            Line(LedgerAccount.PROVIDER_CLEARING, refund.amount),
        ],
    )
    dispute_holds.follow_refunds(payment, refund)
    total = refunded_total(payment)
    details = refund_event_data(refund, total)
    if total >= payment.amount and payment.status in SETTLED_STATUSES:
        lifecycle.transition(payment, S.REFUNDED, at=now, event_details=details)
        return
    record_event(
        payment.account_id,
        payment.mode,
        "payment.refunded",
        payment_event_data(payment, payment.status, now) | details,
        subject_type="transaction",
        subject_id=payment.id,
    )
