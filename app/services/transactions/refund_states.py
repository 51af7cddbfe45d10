"""The refund state machine, shared by merchant refunds (`refunds`) and automatic Pix returns
(`pix_payments`): PENDING → IN_PROGRESS → REFUNDED or FAILED, and straight from PENDING to
an end (a sandbox return that ends at once, a refusal, a waiting refund cancelled)."""

from datetime import datetime

from app.models import Refund, RefundStatus
from app.models.base import utcnow
from app.services.state_machine import StateMachine

R = RefundStatus
REFUND_MACHINE = StateMachine(
    "refund",
    {
        R.PENDING: frozenset({R.IN_PROGRESS, R.REFUNDED, R.FAILED}),
        R.IN_PROGRESS: frozenset({R.REFUNDED, R.FAILED}),
    },
)


def move(refund: Refund, to: RefundStatus, at: datetime | None = None) -> None:
    """Move the refund (the caller holds its lock) through the table."""
    REFUND_MACHINE.move(refund, to)
    refund.updated_at = at or utcnow()
