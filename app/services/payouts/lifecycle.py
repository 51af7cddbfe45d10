"""The payout state machine: one table of allowed moves and one `transition` function.

Nothing else assigns `Payout.status`. A move is checked against `TRANSITIONS`, written, and
its events recorded in the same database transaction (the outbox): the canonical `payout.*`
event carries the public Payout, the legacy `withdrawal.*` event the withdrawal data. Every
step that changes a payout takes its row lock first (`lock`); the steps people take (approve,
reject, cancel) are audited (`record_audit`).
"""

from app.errors import NotFound
from app.formats.payouts import payout_object, withdrawal_event_data
from app.marks import translatable
from app.models import Payout, PayoutStatus
from app.models.base import utcnow
from app.services import audit, locking
from app.services.events import record_event
from app.services.state_machine import StateMachine

W = PayoutStatus

TRANSITIONS: dict[PayoutStatus, frozenset[PayoutStatus]] = {
    W.PENDING: frozenset({W.APPROVED, W.REJECTED, W.CANCELLED}),
    W.APPROVED: frozenset({W.PROCESSING}),
    W.PROCESSING: frozenset({W.COMPLETED, W.FAILED}),
}
PAYOUT_MACHINE = StateMachine("withdrawal", TRANSITIONS)

# Events recorded on entering a status: canonical first, then the legacy family.
EVENTS_ON_ENTRY: dict[PayoutStatus, tuple[str, ...]] = {
    W.PENDING: ("payout.created", "withdrawal.created"),
    W.COMPLETED: ("payout.paid", "withdrawal.completed"),
    W.FAILED: ("payout.failed", "withdrawal.failed"),
    W.REJECTED: ("payout.failed", "withdrawal.failed"),
    W.CANCELLED: ("payout.failed", "withdrawal.failed"),
}


def lock(payout_id: str) -> Payout:
    """The row, locked until commit (`locking.lock`); an unknown id is 404."""
    payout = locking.lock(Payout, payout_id)
    if payout is None:
        raise NotFound(translatable("No such withdrawal."))
    return payout


def transition(payout: Payout, to: PayoutStatus) -> None:
    """Move `payout` to `to` (the caller holds its lock) and record the events."""
    previous = PAYOUT_MACHINE.move(payout, to)
    payout.updated_at = utcnow()
    record_events(payout, previous)


def record_events(payout: Payout, previous: PayoutStatus | None) -> None:
    """The events of entering the payout's current status; `previous` is None on creation."""
    at = payout.updated_at or utcnow()
    for event_type in EVENTS_ON_ENTRY.get(payout.status, ()):
        data = (
            {"object": payout_object(payout)}
            if event_type.startswith("payout.")
            else withdrawal_event_data(payout, previous, at)
        )
        record_event(
            payout.account_id,
            payout.mode,
            event_type,
            data,
            subject_type="withdrawal",
            subject_id=payout.id,
        )


def record_audit(payout: Payout, actor_user_id: str | None, action: str) -> None:
    """The audit log's line for a decision on the payout (None: the platform decided)."""
    audit.record(
        account_id=payout.account_id,
        actor_user_id=actor_user_id,
        action=action,
        subject_type="withdrawal",
        subject_id=payout.id,
        details={"amount": payout.amount, "fee": payout.fee},
    )
