"""A refund's money: funding it from the wallet when the money is there (at the request, or
later for one that waits), ending the ones that wait, and giving back what funding took when
a funded one fails.

Money moves at three points, each a ledger posting unique per refund:
- funding debits the tranche's pending part and available (the amount, plus the Pix-out fee
  when `passFeeToTenant`) into refund clearing, holding the transaction's row lock;
- REFUNDED (`refund_submission`) moves the amount from refund clearing out to the provider
  (and an undecided dispute of the transaction releases what the refund already returned,
  `dispute_holds`);
- FAILED returns what funding debited: the tranche's part to the tranche while it is still
  pending, the rest to available.

Locks are always taken in one order (transaction, refund, dispute case, tranche, wallet),
so concurrent refunds, disputes and releases never deadlock.
"""

import sqlalchemy as sa

from app.extensions import MONEY_QUEUE, db
from app.models import (
    DISPUTED_STATUSES,
    LedgerAccount,
    PendingReason,
    Refund,
    RefundStatus,
    SettlementRelease,
    Transaction,
)
from app.models.base import utcnow
from app.queueing import enqueue_after_commit
from app.services import ledger, locking
from app.services.ledger import Line
from app.services.transactions import lifecycle, refund_states

R = RefundStatus
SUBMIT_JOB = "app.jobs.refunds.submit_refund"  # queued once a refund is funded
# Ledger posting kinds, unique per refund.
DEBIT, COMPLETION, REVERSAL = "refund_debit", "refund_completion", "refund_reversal"


def waiting_refunds(limit: int = 200) -> list[str]:
    """Refunds waiting for money, oldest first: the first asked are the first funded."""
    return list(
        db.session.scalars(
            sa.select(Refund.id)
            .where(Refund.status == R.PENDING, Refund.pending_reason.is_not(None))
            .order_by(Refund.created_at, Refund.id)
            .limit(limit)
        )
    )


def fund(refund_id: str) -> Refund | None:
    """Fund a waiting refund if the money is there now (and queue its submission); one of a
    disputed transaction waits for the decision."""
    refund, payment = lock(refund_id)
    if refund is None or refund.status is not R.PENDING or refund.pending_reason is None:
        return refund
    if payment.status not in DISPUTED_STATUSES and fund_now(refund):
        refund.updated_at = utcnow()
        enqueue_after_commit(db.session(), MONEY_QUEUE, SUBMIT_JOB, refund.id)
    return refund


def fail_waiting(payment: Transaction, reason: str) -> None:
    """End every refund of the locked `payment` still waiting for money (a lost dispute
    already returned the amount to the payer)."""
    waiting = db.session.scalars(
        sa.select(Refund)
        .where(
            Refund.transaction_id == payment.id,
            Refund.status == R.PENDING,
            Refund.pending_reason.is_not(None),
        )
        .order_by(Refund.created_at, Refund.id)
        .with_for_update()
        .execution_options(populate_existing=True)
    ).all()
    for refund in waiting:
        end_waiting(refund, reason)


def _unreleased_tranche(refund: Refund) -> SettlementRelease | None:
    """The refunded payment's own settlement tranche while it is still pending, locked."""
    return db.session.scalar(
        sa.select(SettlementRelease)
        .where(
            SettlementRelease.reference_id == refund.transaction_id,
            SettlementRelease.released_at.is_(None),
        )
        .with_for_update()
        .execution_options(populate_existing=True)
    )


def fund_now(refund: Refund) -> bool:
    """Debit the refund now when the payment's unreleased tranche plus available cover it
    (True); otherwise record why it waits and debit nothing (False)."""
    total = refund.amount + refund.fee
    tranche = _unreleased_tranche(refund)
    from_pending = min(tranche.amount, total) if tranche else 0
    from_available = total - from_pending
    wallet = ledger.locked_wallet(refund.account_id, refund.mode, refund.currency)
    if from_available > max(wallet.available, 0):
        other_pending = wallet.pending - from_pending
        covered_by_releases = wallet.available + other_pending >= from_available
        refund.pending_reason = (
            PendingReason.CHARGE_PENDING
            if covered_by_releases
            else PendingReason.INSUFFICIENT_FUNDS
        )
        return False
    if tranche is not None:
        tranche.amount -= from_pending
    refund.taken_from_pending = from_pending
    refund.pending_reason = None
    lines = [
        Line(LedgerAccount.PENDING, -from_pending),
        Line(LedgerAccount.AVAILABLE, -from_available),
        Line(LedgerAccount.REFUND_CLEARING, refund.amount),
        Line(LedgerAccount.PLATFORM_FEES, refund.fee),
    ]
    post(refund, DEBIT, "Refund funded", lines)
    return True


def fail_funded(refund: Refund, payment: Transaction, reason: str) -> None:
    """FAILED: what funding debited goes back, the tranche's part to the tranche while it is
    still pending, everything else to available."""
    now = utcnow()
    refund_states.move(refund, R.FAILED, now)
    refund.completed_at = now
    refund.failure_reason = reason[:500]
    tranche = _unreleased_tranche(refund) if refund.taken_from_pending else None
    to_pending = refund.taken_from_pending if tranche is not None else 0
    if tranche is not None:
        tranche.amount += to_pending
    lines = [
        Line(LedgerAccount.REFUND_CLEARING, -refund.amount),
        Line(LedgerAccount.PLATFORM_FEES, -refund.fee),
        Line(LedgerAccount.PENDING, to_pending),
        Line(LedgerAccount.AVAILABLE, refund.amount + refund.fee - to_pending),
    ]
    post(refund, REVERSAL, "Refund failed, returned", lines)


def end_waiting(refund: Refund, reason: str) -> None:
    """A refund that never got money ends FAILED; there is nothing to give back."""
    now = utcnow()
    refund_states.move(refund, R.FAILED, now)
    refund.completed_at = now
    refund.pending_reason = None
    refund.failure_reason = reason[:500]


def post(refund: Refund, kind: str, label: str, lines: list[Line]) -> None:
    """Book one of the refund's postings (`kind`: one of each per refund), empty lines left out."""
    ledger.post(
        account_id=refund.account_id,
        mode=refund.mode,
        currency=refund.currency,
        kind=kind,
        reference_id=refund.id,
        description=f"{label}: refund {refund.id} of transaction {refund.transaction_id}",
        lines=[line for line in lines if line.amount],
    )


def lock(refund_id: str) -> tuple[Refund | None, Transaction | None]:
    """The refund and its transaction, locked in the one order (transaction first)."""
    transaction_id = db.session.scalar(
        sa.select(Refund.transaction_id).where(Refund.id == refund_id)
    )
    if transaction_id is None:
        return None, None
    payment = lifecycle.lock(transaction_id)
    return locking.lock(Refund, refund_id), payment
