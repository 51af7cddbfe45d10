"""Sending an approved payout through its provider, and booking how it ends.

Processing runs in an RQ job (`app.jobs.payouts`, enqueued after the approval commits); a
periodic sweep picks up approvals whose job never ran and payouts whose sender died. Each
outcome is one unique ledger posting, so it can never happen twice:

- completion moves the amount from payout clearing to the provider;
- failure (the acquirer rejects) returns amount + fee to `available`, atomically.
"""

from collections.abc import Callable
from datetime import datetime, timedelta

import sqlalchemy as sa

from app.extensions import db
from app.models import LedgerAccount, Payout, PayoutStatus, PayoutType
from app.models.base import utcnow
from app.providers import provider_named
from app.providers.base import PayoutRejected, PayoutRequest
from app.services import ledger
from app.services.ledger import Line
from app.services.payouts.lifecycle import lock, transition
from app.services.payouts.requesting import CRYPTO_NETWORK

W = PayoutStatus
STUCK_AFTER = timedelta(minutes=5)
JOB_GRACE = timedelta(minutes=1)  # an approval's own job normally runs well within this
# The outcomes' ledger posting kinds, unique per payout.
COMPLETION, REFUND = "payout_completion", "payout_refund"


def start_processing(payout_id: str, now: datetime | None = None) -> Payout | None:
    """Claim a payout to send: APPROVED → PROCESSING, or a PROCESSING one whose sender has
    been silent for STUCK_AFTER (its worker died; the provider call is idempotent). None when
    someone else is sending it or there is nothing to send."""
    now = now or utcnow()
    payout = lock(payout_id)
    if payout.status is W.APPROVED:
        transition(payout, W.PROCESSING)
        return payout
    if payout.status is W.PROCESSING and payout.updated_at <= now - STUCK_AFTER:
        payout.updated_at = now
        return payout
    return None


def send(payout: Payout) -> None:
    """Ask the provider to pay out (idempotent by our id), then settle the outcome. Only a
    definitive rejection refunds; an unknown outcome (ProviderError) propagates and the
    payout stays PROCESSING until the sweep retries it."""
    provider = provider_named(payout.provider, payout.mode)
    request = PayoutRequest(
        reference=payout.id,
        payout_type=str(payout.type),
        amount=payout.amount,
        currency=payout.currency,
        destination=_destination_of(payout),
        requested_at=payout.created_at,
    )
    try:
        sent = provider.payout(request)
    except PayoutRejected as rejection:
        _fail(payout.id, rejection.message)
        return
    _complete(payout.id, sent.reference)


def due_for_processing(now: datetime | None = None, limit: int = 100) -> list[str]:
    """Payouts approved a while ago whose job never ran (Redis was down), and payouts stuck
    in PROCESSING (their worker died), to (re)send; fresh approvals are left to their job."""
    now = now or utcnow()
    return db.session.scalars(
        sa.select(Payout.id)
        .where(
            sa.or_(
                sa.and_(Payout.status == W.APPROVED, Payout.updated_at <= now - JOB_GRACE),
                sa.and_(Payout.status == W.PROCESSING, Payout.updated_at <= now - STUCK_AFTER),
            ),
        )
        .order_by(Payout.updated_at)
        .limit(limit)
    ).all()


def _complete(payout_id: str, reference: str) -> None:
    payout = _book_outcome(
        payout_id,
        COMPLETION,
        f"settled ({reference})",
        lambda w: [
            Line(LedgerAccount.PAYOUT_CLEARING, -w.amount),
            Line(LedgerAccount.PROVIDER_CLEARING, w.amount),
        ],
    )
    if payout is not None:
        payout.provider_reference = reference
        payout.completed_at = utcnow()
        transition(payout, W.COMPLETED)


def _fail(payout_id: str, reason: str) -> None:
    """The acquirer rejected it: amount + fee go back to `available` in one posting."""
    payout = _book_outcome(
        payout_id,
        REFUND,
        "rejected by the acquirer: refund",
        lambda w: [
            Line(LedgerAccount.PAYOUT_CLEARING, -w.amount),
            Line(LedgerAccount.PLATFORM_FEES, -w.fee),
            Line(LedgerAccount.AVAILABLE, w.wallet_debit),
        ],
    )
    if payout is not None:
        payout.failure_reason = reason
        transition(payout, W.FAILED)


def _book_outcome(
    payout_id: str, kind: str, what: str, lines: Callable[[Payout], list[Line]]
) -> Payout | None:
    """Lock a PROCESSING payout and post its outcome; None if it is no longer processing."""
    payout = lock(payout_id)
    if payout.status is not W.PROCESSING:
        return None
    ledger.post(
        account_id=payout.account_id,
        mode=payout.mode,
        currency=payout.currency,
        kind=kind,
        reference_id=payout.id,
        description=f"Payout {payout.id} {what}",
        lines=lines(payout),
    )
    return payout


def _destination_of(payout: Payout) -> dict:
    """The destination as the provider's payout call takes it."""
    if payout.type is PayoutType.PIX:
        return {"pixKey": payout.pix_key, "pixKeyType": payout.pix_key_type}
    if payout.type is PayoutType.TED:
        return dict(payout.bank_account or {})
    return {"cryptoAddress": payout.crypto_address, "cryptoNetwork": CRYPTO_NETWORK}
