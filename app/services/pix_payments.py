"""Settlement of a Pix received for a charge, from the contract's transition table.

One entry point, `receive`, for every source of "a Pix arrived" (the sandbox endpoint and
button today, a live PSP's webhook later). It is idempotent by end-to-end id and decides:

- exact amount, payer check passing or no payer lock → `paid`, wallet credited (fees) in
  its pending balance, released to available on the settlement schedule;
- a different amount → refused by the bank (Pix is exact-amount); the charge stays pending;
- payer lock set and a different payer document → `refunded`, returned automatically;
- payer lock set and no payer document reported → `processing`, held for manual review;
- the charge expired (or otherwise not payable) → returned, never credited.
"""

from dataclasses import dataclass
from datetime import datetime

import sqlalchemy as sa

from app.errors import Conflict
from app.extensions import db
from app.models import (
    ReceivedPix,
    ReceivedPixOutcome,
    Refund,
    RefundStatus,
    RefundStrategy,
    Transaction,
    TransactionStatus,
)
from app.models.base import utcnow
from app.pix.documents import strip_formatting
from app.providers import provider_named
from app.providers.api_pix.mapping import REFUND_STATUS
from app.services import audit, charges, settlement, transactions
from app.services.transactions import AWAITING_PAYMENT

Outcome = ReceivedPixOutcome


@dataclass(frozen=True)
class IncomingPix:
    end_to_end_id: str
    amount: int
    payer_document: str | None
    payer_name: str | None
    received_at: datetime


def receive(charge_id: str, pix: IncomingPix) -> ReceivedPix:
    """Apply a received Pix to its charge once; a repeated notification returns the first."""
    seen = db.session.get(ReceivedPix, pix.end_to_end_id)
    if seen is not None:
        return seen
    charge = transactions.lock(charge_id)
    seen = _already_received(pix.end_to_end_id)  # a twin may have committed while we waited
    if seen is not None:
        return seen
    charge = charges.expire_if_due(charge, pix.received_at)
    outcome = _outcome(charge, pix)
    received = ReceivedPix(
        end_to_end_id=pix.end_to_end_id,
        transaction_id=charge.id,
        amount=pix.amount,
        payer_document=_document(pix.payer_document),
        payer_name=pix.payer_name,
        outcome=outcome,
        received_at=pix.received_at,
    )
    db.session.add(received)
    db.session.flush()
    if outcome is Outcome.CREDITED:
        _credit(charge, received)
    elif outcome is Outcome.HELD_FOR_REVIEW:
        transactions.transition(charge, TransactionStatus.PROCESSING)
    elif outcome is Outcome.RETURNED_PAYER_MISMATCH:
        _return(charge, received, "The payer's document differs from expected_payer_tax_id.")
        transactions.transition(charge, TransactionStatus.REFUNDED)
    elif outcome in (Outcome.RETURNED_AFTER_EXPIRY, Outcome.RETURNED_NOT_PAYABLE):
        _return(charge, received, f"The charge was {charge.status} when the Pix arrived.")
    return received


def _already_received(end_to_end_id: str) -> ReceivedPix | None:
    return db.session.scalar(
        sa.select(ReceivedPix)
        .where(ReceivedPix.end_to_end_id == end_to_end_id)
        .execution_options(populate_existing=True)
    )


def held_payment(charge: Transaction) -> ReceivedPix:
    """The Pix a charge in manual review is holding."""
    held = _held(charge)
    if charge.status is not TransactionStatus.PROCESSING or held is None:
        raise Conflict("This charge holds no payment for review.", code="charge_not_in_review")
    return held


def _held(charge: Transaction) -> ReceivedPix | None:
    return db.session.scalars(
        sa.select(ReceivedPix).where(
            ReceivedPix.transaction_id == charge.id,
            ReceivedPix.outcome == Outcome.HELD_FOR_REVIEW,
        )
    ).first()


def release_held(charge_id: str, actor_user_id: str) -> Transaction:
    """Review passed: the held Pix is credited and the charge becomes paid."""
    charge = transactions.lock(charge_id)
    held = held_payment(charge)
    held.outcome = Outcome.CREDITED
    _credit(charge, held)
    _audit(charge, actor_user_id, "charge.review_released", held)
    return charge


def return_held(charge_id: str, actor_user_id: str) -> Transaction:
    """Review failed: the held Pix goes back to the payer and the charge becomes refunded."""
    charge = transactions.lock(charge_id)
    held = held_payment(charge)
    held.outcome = Outcome.RETURNED_AFTER_REVIEW
    _return(charge, held, "Returned after manual review: the payer could not be confirmed.")
    transactions.transition(charge, TransactionStatus.REFUNDED)
    _audit(charge, actor_user_id, "charge.review_returned", held)
    return charge


def return_held_on_cancel(charge: Transaction) -> None:
    """The merchant cancelled a charge in review: the Pix it holds goes back to the payer
    (the caller holds the lock and moves the charge to CANCELLED); nothing when none is held."""
    held = _held(charge)
    if held is None:
        return
    held.outcome = Outcome.RETURNED_NOT_PAYABLE
    _return(charge, held, "Returned: the merchant cancelled the charge during review.")


def _outcome(charge: Transaction, pix: IncomingPix) -> ReceivedPixOutcome:
    if charge.status is TransactionStatus.EXPIRED:
        return Outcome.RETURNED_AFTER_EXPIRY
    if charge.status not in AWAITING_PAYMENT:
        return Outcome.RETURNED_NOT_PAYABLE
    if charge.pix_expires_at is not None and pix.received_at >= charge.pix_expires_at:
        return Outcome.RETURNED_AFTER_EXPIRY  # its Pix code lapsed; other methods still open
    if pix.amount != charge.amount:
        return Outcome.REFUSED_AMOUNT
    if charge.expected_payer_tax_id is None:
        return Outcome.CREDITED
    payer = _document(pix.payer_document)
    if payer is None:
        return Outcome.HELD_FOR_REVIEW
    if payer != charge.expected_payer_tax_id:
        return Outcome.RETURNED_PAYER_MISMATCH
    return Outcome.CREDITED


def _document(document: str | None) -> str | None:
    return strip_formatting(document.strip()).upper() if document and document.strip() else None


def _credit(charge: Transaction, received: ReceivedPix) -> None:
    charge.end_to_end_id = received.end_to_end_id
    settlement.credit(
        charge,
        method="PIX",
        amount=received.amount,
        paid_at=received.received_at,
        description=f"Pix {received.end_to_end_id} for charge ch_{charge.id}",
    )


def _return(charge: Transaction, received: ReceivedPix, reason: str) -> Refund:
    """An automatic Pix return by the original end-to-end id; the wallet is not involved."""
    refund = Refund(
        account_id=charge.account_id,
        transaction_id=charge.id,
        mode=charge.mode,
        amount=received.amount,
        currency=charge.currency,
        status=RefundStatus.PENDING,
        reason=reason,
        automatic=True,
        method="PIX",
        strategy=RefundStrategy.DEVOLUTION,
        end_to_end_id=received.end_to_end_id,
    )
    db.session.add(refund)
    db.session.flush()
    provider = provider_named(charge.provider, charge.mode)
    sent = provider.return_pix(received.end_to_end_id, received.amount, refund.id)
    refund.return_id = sent.return_id
    refund.status = REFUND_STATUS[sent.status]
    refund.updated_at = utcnow()
    if refund.status is RefundStatus.REFUNDED:
        refund.completed_at = refund.updated_at
    return refund


def _audit(charge: Transaction, actor_user_id: str, action: str, held: ReceivedPix) -> None:
    audit.record(
        account_id=charge.account_id,
        actor_user_id=actor_user_id,
        action=action,
        subject_type="charge",
        subject_id=charge.id,
        details={"end_to_end_id": held.end_to_end_id, "amount": held.amount},
    )
