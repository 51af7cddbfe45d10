"""How much of a transaction the merchant's refunds have sent back, or claim.

Refunds, dispute holds and the dashboard all reason with these two sums, so they live
below all three. Automatic Pix returns are not counted: they never touched the wallet.
"""

import sqlalchemy as sa

from app.extensions import db
from app.models import Refund, RefundStatus, Transaction


def refunded_total(payment: Transaction) -> int:
    """What the merchant's completed refunds sent back to the payer."""
    return _sum_of_refunds(payment, Refund.status == RefundStatus.REFUNDED)


def reserved_total(payment: Transaction) -> int:
    """What the merchant's refunds have taken, are taking or wait to take (all but FAILED):
    the part of the amount no further refund may claim."""
    return _sum_of_refunds(payment, Refund.status != RefundStatus.FAILED)


def _sum_of_refunds(payment: Transaction, condition: sa.ColumnElement[bool]) -> int:
    """An int on every backend: PostgreSQL sums a bigint as numeric (Decimal), which JSON
    event data refuses."""
    total = db.session.scalar(
        sa.select(sa.func.coalesce(sa.func.sum(Refund.amount), 0)).where(
            Refund.transaction_id == payment.id,
            Refund.automatic.is_(False),
            condition,
        )
    )
    return int(total)
