"""Deciding a PENDING payout: staff approve or reject it, or a flagged account's BRL payout is
approved at once up to its threshold; and the back-office queue of what waits for them.

Approval is where the money first moves: amount + fee leave `available` in one unique ledger
posting, under the wallet's row lock, and only when the balance still covers both (no partial
debit, never below zero). The processing job is enqueued after the approval commits. A
rejection debits nothing. Staff never decide a payout of an account they belong to.

The queue reads across every merchant account on purpose (platform staff only), so no
merchant-facing route may call `pending_payouts_with_accounts`.
"""

from dataclasses import dataclass

import sqlalchemy as sa
from flask import current_app

from app.errors import ApiError, Conflict, PermissionDenied
from app.extensions import MONEY_QUEUE, db
from app.marks import translatable
from app.models import Account, LedgerAccount, Payout, PayoutStatus
from app.queueing import enqueue_after_commit
from app.services import accounts, ledger
from app.services.ledger import Line
from app.services.payouts import listing
from app.services.payouts.funding import BRL, check_covered
from app.services.payouts.lifecycle import lock, record_audit, transition

W = PayoutStatus
DEBIT = "payout_debit"  # the approval's ledger posting kind, unique per payout
PROCESS_JOB = "app.jobs.payouts.process_payout"
DEFAULT_QUEUE_LIMIT = 100


@dataclass(frozen=True)
class PendingPayout:
    """A row of the back-office queue: the payout and the merchant who asked for it."""

    payout: Payout
    account_name: str


NOT_PENDING = {
    "approved": translatable("Only a PENDING withdrawal can be approved; this one is %(status)s."),
    "rejected": translatable("Only a PENDING withdrawal can be rejected; this one is %(status)s."),
}


def approve(payout_id: str, actor_user_id: str) -> Payout:
    """Staff approval: debits amount + fee now, or refuses (409) if the balance no longer
    covers them; processing starts after the commit."""
    payout = lock(payout_id)
    _refuse_own_account(payout, actor_user_id)
    approve_pending(payout, actor_user_id)
    return payout


def reject(payout_id: str, actor_user_id: str, reason: str | None) -> Payout:
    """Staff refusal of a PENDING payout; nothing was debited, nothing moves."""
    payout = lock(payout_id)
    _refuse_own_account(payout, actor_user_id)
    _require_pending(payout, "rejected")
    payout.decided_by_user_id = actor_user_id
    payout.failure_reason = reason or "Rejected by the platform's review."
    transition(payout, W.REJECTED)
    record_audit(payout, actor_user_id, "payout.rejected")
    return payout


def auto_approves(account: Account, payout: Payout) -> bool:
    """Flagged accounts skip approval for BRL payouts up to their threshold."""
    threshold = account.withdrawals_auto_approve_threshold
    if threshold is None:
        threshold = current_app.config["WITHDRAWALS_AUTO_APPROVE_THRESHOLD"]
    return (
        account.withdrawals_auto_approve and payout.currency == BRL and payout.amount <= threshold
    )


def approve_pending(
    payout: Payout, actor_user_id: str | None, refusal: type[ApiError] = Conflict
) -> None:
    """Debit a locked PENDING payout and approve it (`actor_user_id` None: auto-approval);
    `refusal` is the error when the balance no longer covers amount + fee."""
    _require_pending(payout, "approved")
    total = payout.wallet_debit
    check_covered(
        payout.account_id,
        payout.mode,
        payout.currency,
        total,
        locked=True,
        refusal=refusal,
    )
    ledger.post(
        account_id=payout.account_id,
        mode=payout.mode,
        currency=payout.currency,
        kind=DEBIT,
        reference_id=payout.id,
        description=f"Payout {payout.id}",
        lines=[
            Line(LedgerAccount.AVAILABLE, -total),
            Line(LedgerAccount.PAYOUT_CLEARING, payout.amount),
            Line(LedgerAccount.PLATFORM_FEES, payout.fee),
        ],
    )
    payout.decided_by_user_id = actor_user_id
    transition(payout, W.APPROVED)
    record_audit(payout, actor_user_id, "payout.approved")
    enqueue_after_commit(db.session(), MONEY_QUEUE, PROCESS_JOB, payout.id)


def pending_payouts_with_accounts(limit: int = DEFAULT_QUEUE_LIMIT) -> list[PendingPayout]:
    """PENDING payouts of every account, oldest first, with account names in one query."""
    waiting = listing.pending_review(limit)
    names = dict(
        db.session.execute(
            sa.select(Account.id, Account.name).where(
                Account.id.in_({payout.account_id for payout in waiting})
            )
        ).all()
    )
    return [PendingPayout(payout, names[payout.account_id]) for payout in waiting]


def _require_pending(payout: Payout, action: str) -> None:
    if payout.status is not W.PENDING:
        raise Conflict(
            NOT_PENDING[action], values={"status": payout.status}, code="withdrawal_not_pending"
        )


def _refuse_own_account(payout: Payout, actor_user_id: str) -> None:
    """Four eyes: staff never decide a payout they asked for or of an account they belong to."""
    if payout.requested_by_user_id == actor_user_id or accounts.active_membership(
        actor_user_id, payout.account_id
    ):
        raise PermissionDenied(
            translatable("Staff may not decide payouts of an account they belong to."),
            code="self_approval_forbidden",
        )
