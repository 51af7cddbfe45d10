"""Settlement of a Pix received for a charge, from the contract's transition table.

One entry point, `receive`, for every source of "a Pix arrived" (the sandbox endpoint and
button today, a live PSP's webhook later). It is idempotent by end-to-end id and decides:

- exact amount, payer check passing or no payer lock → `paid`, wallet credited (fees) in
  its pending balance, released to available on the settlement schedule;
- a different amount → refused (Pix is exact-amount: for a charge with a due date, the
  amount its terms ask on the Pix's São Paulo day); the charge stays pending. In test
  mode the simulated bank refuses it; in live mode the money has reached the PSP, so it is
  returned automatically;
- payer lock set and a different payer document → `refunded`, returned automatically;
- payer lock set and no payer document reported, or one that is not a whole valid CPF or
  CNPJ (masked digits) → `processing`, held for manual review;
- the charge expired (or otherwise not payable) → returned, never credited. A Pix whose
  `received_at` is before the charge's deadline was paid in time, however late we hear of
  it (a late webhook, reconciliation): it settles as above, even if the charge has expired.

Automatic returns are devoluções of the whole Pix. Their refund id, and so their devolução
id, derives from the end-to-end id: asking again after a lost answer asks for the same
devolução, never a second one. A return the provider refuses, or one past the 90-day
devolução window, is FAILED and logged for operations; a person returning a held Pix past
the window is told so instead.
"""

import logging
import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta

import sqlalchemy as sa

from app.errors import Conflict, Unprocessable
from app.extensions import db
from app.marks import translatable
from app.models import (
    FINAL_REFUND_STATUSES,
    KeyMode,
    ReceivedPix,
    ReceivedPixOutcome,
    Refund,
    RefundStatus,
    RefundStrategy,
    Transaction,
    TransactionStatus,
)
from app.models.base import utcnow
from app.pix import due
from app.pix.documents import strip_formatting, tax_id_kind
from app.providers import provider_named
from app.providers.api_pix.mapping import refund_reference
from app.providers.base import ProviderRefused
from app.services import audit
from app.services.transactions import charge_expiry, lifecycle, refund_states, settlement
from app.services.transactions.lifecycle import AWAITING_PAYMENT

log = logging.getLogger(__name__)
Outcome = ReceivedPixOutcome
DEVOLUTION_WINDOW = timedelta(days=90)
# The namespace of automatic return ids: uuid5(namespace, end-to-end id).
AUTOMATIC_RETURN_NAMESPACE = uuid.UUID("754b38bc-79c8-4c9f-bb0f-fb595210abd4")
MAX_FAILURE_REASON = 500
# Outcomes that move the charge on (out of `expired`, for a Pix paid in time).
SETTLING_OUTCOMES = frozenset(
    {Outcome.CREDITED, Outcome.HELD_FOR_REVIEW, Outcome.RETURNED_PAYER_MISMATCH}
)


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
    charge = lifecycle.lock(charge_id)
    seen = _already_received(pix.end_to_end_id)  # a twin may have committed while we waited
    if seen is not None:
        return seen
    charge = charge_expiry.expire_if_due(charge, pix.received_at)
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
    if charge.status is TransactionStatus.EXPIRED and outcome in SETTLING_OUTCOMES:
        # Paid in time after all: the expiry's failure no longer describes the charge.
        charge.metadata_ = {k: v for k, v in charge.metadata_.items() if k != "failure"}
    if outcome is Outcome.CREDITED:
        _credit(charge, received)
    elif outcome is Outcome.HELD_FOR_REVIEW:
        lifecycle.transition(charge, TransactionStatus.PROCESSING)
    elif outcome is Outcome.RETURNED_PAYER_MISMATCH:
        _return(charge, received, "The payer's document differs from expected_payer_tax_id.")
        lifecycle.transition(charge, TransactionStatus.REFUNDED)
    elif outcome in (Outcome.RETURNED_AFTER_EXPIRY, Outcome.RETURNED_NOT_PAYABLE):
        _return(charge, received, f"The charge was {charge.status} when the Pix arrived.")
    elif outcome is Outcome.REFUSED_AMOUNT and charge.mode is KeyMode.LIVE:
        _return(charge, received, "The Pix's amount differs from the charge's (exact-amount).")
    return received


def within_devolution_window(paid_at: datetime) -> bool:
    """Whether a Pix paid at `paid_at` can still be returned by devolução (90 days)."""
    return utcnow() - paid_at <= DEVOLUTION_WINDOW


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
    charge = lifecycle.lock(charge_id)
    held = held_payment(charge)
    held.outcome = Outcome.CREDITED
    _credit(charge, held)
    _audit(charge, actor_user_id, "charge.review_released", held)
    return charge


def return_held(charge_id: str, actor_user_id: str) -> Refund:
    """Review failed: the held Pix goes back to the payer and the charge becomes refunded;
    409 `refund_window_expired`, nothing changed, when it was received over 90 days ago.
    Returns the return itself, whose status says whether the payer has the money yet; a
    provider that refuses it is 422 `return_refused` (roll back: the Pix stays held)."""
    charge = lifecycle.lock(charge_id)
    held = _returnable(held_payment(charge))
    held.outcome = Outcome.RETURNED_AFTER_REVIEW
    returned = _held_return(
        charge, held, "Returned after manual review: the payer could not be confirmed."
    )
    lifecycle.transition(charge, TransactionStatus.REFUNDED)
    _audit(charge, actor_user_id, "charge.review_returned", held)
    return returned


def returnable_held(charge: Transaction) -> ReceivedPix | None:
    """The Pix a charge holds for review (None when it holds none), checked before anything
    moves that it can still be returned: 409 `refund_window_expired` otherwise."""
    held = _held(charge)
    return None if held is None else _returnable(held)


def return_held_on_cancel(charge: Transaction, held: ReceivedPix) -> None:
    """The merchant cancelled a charge in review: the Pix it holds (`returnable_held`) goes
    back to the payer; the caller holds the lock and moves the charge to CANCELLED. A return
    the provider refuses is 422 `return_refused`: roll back, the Pix stays held."""
    held.outcome = Outcome.RETURNED_NOT_PAYABLE
    _held_return(charge, held, "Returned: the merchant cancelled the charge during review.")


def _held_return(charge: Transaction, held: ReceivedPix, reason: str) -> Refund:
    """A held Pix sent back on a person's request: one the provider refuses is not a refund
    but a refusal they are told about (nothing else changes once the caller rolls back)."""
    returned = _return(charge, held, reason)
    if returned.status is RefundStatus.FAILED:
        raise Unprocessable(
            f"{returned.failure_reason} The Pix stays held: release it, or settle with the "
            "payer outside Pix.",
            code="return_refused",
        )
    return returned


def _returnable(held: ReceivedPix) -> ReceivedPix:
    if not within_devolution_window(held.received_at):
        raise Conflict(
            "This Pix was received over 90 days ago and can no longer be returned by "
            "devolução; release it, or settle with the payer outside Pix.",
            code="refund_window_expired",
        )
    return held


def _outcome(charge: Transaction, pix: IncomingPix) -> ReceivedPixOutcome:
    if charge.status is TransactionStatus.EXPIRED and not _paid_in_time(charge, pix):
        return Outcome.RETURNED_AFTER_EXPIRY
    if charge.status not in AWAITING_PAYMENT | {TransactionStatus.EXPIRED}:
        return Outcome.RETURNED_NOT_PAYABLE
    if charge.pix_expires_at is not None and pix.received_at >= charge.pix_expires_at:
        return Outcome.RETURNED_AFTER_EXPIRY  # its Pix code lapsed; other methods still open
    if pix.amount != due.amount_payable(charge, pix.received_at):
        return Outcome.REFUSED_AMOUNT
    if charge.expected_payer_tax_id is None:
        return Outcome.CREDITED
    payer = _proven_payer(pix.payer_document)
    if payer is None:
        return Outcome.HELD_FOR_REVIEW
    if payer != charge.expected_payer_tax_id:
        return Outcome.RETURNED_PAYER_MISMATCH
    return Outcome.CREDITED


def _paid_in_time(charge: Transaction, pix: IncomingPix) -> bool:
    """An expired charge whose Pix was made before the deadline (heard of after the expiry
    sweep): a valid payment. `received_at` is the Pix's own time (`horario`)."""
    return charge.expires_at is not None and pix.received_at < charge.expires_at


def _document(document: str | None) -> str | None:
    return strip_formatting(document.strip()).upper() if document and document.strip() else None


def _proven_payer(document: str | None) -> str | None:
    """The payer's CPF or CNPJ, or None when none was reported or what was reported is not a
    whole valid one (some PSPs mask digits): it then proves nothing about who paid, and a
    payer-locked charge is held for review rather than returned on a guess."""
    normalized = _document(document)
    return normalized if normalized and tax_id_kind(normalized) else None


def _credit(charge: Transaction, received: ReceivedPix) -> None:
    charge.end_to_end_id = received.end_to_end_id
    if charge.due_terms is not None:
        charge.amount = received.amount  # its terms' amount on the day it was paid
    settlement.credit(
        charge,
        method="PIX",
        amount=received.amount,
        paid_at=received.received_at,
        description=f"Pix {received.end_to_end_id} for charge ch_{charge.id}",
    )


def _return(charge: Transaction, received: ReceivedPix, reason: str) -> Refund:
    """An automatic Pix return by the original end-to-end id; the wallet is not involved.
    An outcome-unknown provider error propagates: the caller's transaction rolls back and a
    retry (webhook re-delivery, reconciliation) asks for the same devolução again."""
    refund = Refund(
        id=str(uuid.uuid5(AUTOMATIC_RETURN_NAMESPACE, received.end_to_end_id)),
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
    if not within_devolution_window(received.received_at):
        settle_return(
            refund,
            RefundStatus.FAILED,
            failure_reason=translatable(
                "Not sent: the Pix was received over 90 days ago, past the devolução window."
            ),
        )
        return refund
    provider = provider_named(charge.provider, charge.mode)
    try:
        sent = provider.return_pix(received.end_to_end_id, received.amount, refund.id)
    except ProviderRefused as refusal:
        settle_return(
            refund,
            RefundStatus.FAILED,
            failure_reason=f"The provider refused the return: {refusal.message}",
        )
        return refund
    # The reference the refund job polls, as `ApiPixProvider.refund` builds it; sandbox
    # returns end at once.
    refund.provider_reference = refund_reference(received.end_to_end_id, refund.id)
    settle_return(refund, RefundStatus(sent.status), return_id=sent.return_id)
    return refund


def settle_return(
    refund: Refund,
    status: RefundStatus,
    *,
    failure_reason: str | None = None,
    return_id: str | None = None,
    settled_at: datetime | None = None,
) -> None:
    """Move an automatic return to `status`: its status alone, since no merchant money is
    in it (the Pix was never credited). A failure is logged: the payer was not repaid."""
    now = utcnow()
    if status is not refund.status:
        refund_states.move(refund, status, now)
    refund.return_id = return_id or refund.return_id
    if status in FINAL_REFUND_STATUSES:
        refund.completed_at = settled_at or now
    if status is RefundStatus.FAILED:
        refund.failure_reason = (failure_reason or "The Pix could not be returned.")[
            :MAX_FAILURE_REASON
        ]
        log.error(
            "automatic Pix return failed; the payer has not been repaid",
            extra={"id": refund.id, "transaction_id": refund.transaction_id},
        )


def _audit(charge: Transaction, actor_user_id: str, action: str, held: ReceivedPix) -> None:
    audit.record(
        account_id=charge.account_id,
        actor_user_id=actor_user_id,
        action=action,
        subject_type="charge",
        subject_id=charge.id,
        details={"end_to_end_id": held.end_to_end_id, "amount": held.amount},
    )
