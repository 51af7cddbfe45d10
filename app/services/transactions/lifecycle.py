"""The transaction state machine: one table of allowed moves and one `transition` function.

Nothing else assigns `Transaction.status`. A move is checked against `TRANSITIONS`, written,
and its events recorded in the same database transaction (the outbox): the canonical
`charge.*` event carries the public Charge, the legacy `payment.*` event the transaction data.
"""

from datetime import datetime

from app.errors import NotFound
from app.formats.charges import charge_object
from app.formats.payments import payment_event_data
from app.marks import translatable
from app.models import KeyMode, Transaction, TransactionStatus
from app.models.base import utcnow
from app.services import locking, tenancy
from app.services.events import record_event
from app.services.state_machine import StateMachine

S = TransactionStatus
AWAITING_PAYMENT = frozenset({S.PENDING, S.WAITING_PAYMENT})

TRANSITIONS: dict[TransactionStatus, frozenset[TransactionStatus]] = {
    S.PENDING: frozenset({S.WAITING_PAYMENT, S.REFUSED, S.CANCELLED, S.EXPIRED}),
    S.WAITING_PAYMENT: frozenset(
        {S.PAID, S.PROCESSING, S.REFUNDED, S.EXPIRED, S.CANCELLED, S.REFUSED}
    ),
    S.PROCESSING: frozenset({S.PAID, S.APPROVED, S.REFUNDED, S.CANCELLED, S.REFUSED}),
    # A Pix made before the deadline but heard of after the expiry sweep settles it.
    S.EXPIRED: frozenset({S.PAID, S.PROCESSING, S.REFUNDED}),
    S.PAID: frozenset({S.REFUNDED, S.DISPUTE}),
    S.APPROVED: frozenset({S.REFUNDED, S.CHARGEBACK, S.DISPUTE}),
    S.DISPUTE: frozenset({S.PAID, S.APPROVED}),
    S.CHARGEBACK: frozenset({S.APPROVED}),
}
TRANSACTION_MACHINE = StateMachine("transaction", TRANSITIONS)

# Events recorded on entering a status: canonical first, then the legacy family.
EVENTS_ON_ENTRY: dict[TransactionStatus, tuple[str, ...]] = {
    S.WAITING_PAYMENT: ("charge.created", "payment.created"),
    S.PAID: ("charge.paid", "payment.completed"),
    S.APPROVED: ("charge.paid", "payment.completed"),
    S.REFUSED: ("charge.failed", "payment.failed"),
    S.CANCELLED: ("charge.failed", "payment.failed"),
    S.EXPIRED: ("charge.expired", "payment.expired", "payment.failed"),
    S.REFUNDED: ("payment.refunded",),
    # A dispute sends no charge.* event (the contract); the legacy family reports it failed.
    S.DISPUTE: ("payment.failed",),
    S.CHARGEBACK: ("payment.failed",),
}


def find(
    account_id: str, mode: KeyMode, transaction_id: str, *, answer_only: bool = False
) -> Transaction:
    """A transaction of the caller's account and mode; anything else is 404. With
    `answer_only`, a detached copy read straight on the pool (`tenancy.owned_copy`), for a
    caller that only answers with it."""
    lookup = tenancy.owned_copy if answer_only else tenancy.owned
    return lookup(
        Transaction,
        transaction_id,
        translatable("No such charge."),
        account_id=account_id,
        mode=mode,
    )


def lock(transaction_id: str) -> Transaction:
    """The row, locked until commit (`locking.lock`); an unknown id is 404."""
    transaction = locking.lock(Transaction, transaction_id)
    if transaction is None:
        raise NotFound(translatable("No such charge."))
    return transaction


def transition(
    transaction: Transaction,
    to: TransactionStatus,
    *,
    at: datetime | None = None,
    event_details: dict | None = None,
    record_events: bool = True,
) -> None:
    """Move `transaction` to `to` (the caller holds its lock) and record the events;
    `event_details` adds fields to the legacy `payment.*` data (the refund behind it).
    `record_events=False` is for moves whose own events tell the story (a dispute's end)."""
    previous = TRANSACTION_MACHINE.move(transaction, to)
    transaction.updated_at = at or utcnow()
    for event_type in EVENTS_ON_ENTRY.get(to, ()) if record_events else ():
        record_event(
            transaction.account_id,
            transaction.mode,
            event_type,
            _event_data(event_type, transaction, previous, transaction.updated_at)
            | (event_details if event_type.startswith("payment.") and event_details else {}),
            subject_type="transaction",
            subject_id=transaction.id,
        )


def _event_data(
    event_type: str,
    transaction: Transaction,
    previous: TransactionStatus,
    at: datetime,
) -> dict:
    if event_type.startswith("charge."):
        return {"object": charge_object(transaction)}
    created = event_type == "payment.created"
    return payment_event_data(transaction, None if created else previous, at)


def failure(
    reason: str, code: str, *, ttl_seconds: int | None = None, at: datetime | None = None
) -> dict:
    """`metadata.failure` of a transaction that ended unpaid: why, a code, and when."""
    failure = {"reason": reason, "providerErrorCode": code}
    if ttl_seconds is not None:
        failure["ttlSeconds"] = ttl_seconds
    failure["at"] = (at or utcnow()).isoformat()
    return failure
