"""Money sent back to a payer: merchant refunds (payment routes) and automatic Pix returns.

An automatic return (payer lock mismatch, a payment after expiry, a held payment returned by
review) never touched the merchant's wallet, so it has no ledger posting; it is recorded
against the original end-to-end id, as the central bank's return (devolução) is.
"""

import enum
from datetime import datetime

import sqlalchemy as sa
from sqlalchemy.orm import Mapped, mapped_column

from app.extensions import db
from app.models.api_key import KeyMode
from app.models.base import UTCDateTime, new_id, utcnow


class RefundStatus(enum.StrEnum):
    PENDING = "PENDING"
    IN_PROGRESS = "IN_PROGRESS"
    REFUNDED = "REFUNDED"
    FAILED = "FAILED"


FINAL_REFUND_STATUSES = frozenset({RefundStatus.REFUNDED, RefundStatus.FAILED})


class PendingReason(enum.StrEnum):
    """Why a PENDING refund waits for money before it can go to the provider."""

    CHARGE_PENDING = "charge_pending"  # the wallet's unreleased settlements will cover it
    INSUFFICIENT_FUNDS = "insufficient_funds"  # not even those cover it: new sales must


class RefundStrategy(enum.StrEnum):
    """How a Pix refund leaves: a central-bank return by end-to-end id, or a new Pix-out."""

    DEVOLUTION = "devolution"
    CASHOUT = "cashout"


def _values(kind: type[enum.StrEnum]) -> list[str]:
    return [member.value for member in kind]


class Refund(db.Model):
    __tablename__ = "refunds"
    __table_args__ = (sa.Index("ix_refunds_status", "status", "updated_at"),)

    id: Mapped[str] = mapped_column(sa.String(36), primary_key=True, default=new_id)
    account_id: Mapped[str] = mapped_column(sa.ForeignKey("accounts.id"), index=True)
    transaction_id: Mapped[str] = mapped_column(sa.ForeignKey("transactions.id"), index=True)
    mode: Mapped[KeyMode] = mapped_column(sa.Enum(KeyMode, native_enum=False, length=8))
    amount: Mapped[int] = mapped_column(sa.BigInteger)
    currency: Mapped[str] = mapped_column(sa.String(8))
    status: Mapped[RefundStatus] = mapped_column(
        sa.Enum(RefundStatus, native_enum=False, length=16)
    )
    reason: Mapped[str | None] = mapped_column(sa.String(500))
    automatic: Mapped[bool] = mapped_column(default=False)
    method: Mapped[str | None] = mapped_column(sa.String(16))
    strategy: Mapped[RefundStrategy | None] = mapped_column(
        sa.Enum(RefundStrategy, native_enum=False, length=16)
    )
    pass_fee_to_tenant: Mapped[bool] = mapped_column(default=False)
    destination_key: Mapped[str | None] = mapped_column(sa.String(77))
    fee: Mapped[int] = mapped_column(sa.BigInteger, default=0)
    # Set while the refund waits for money (nothing debited yet); None once it is funded.
    pending_reason: Mapped[PendingReason | None] = mapped_column(
        sa.Enum(PendingReason, native_enum=False, length=32, values_callable=_values)
    )
    # What its funding took from the payment's own unreleased settlement tranche (the rest
    # came from available); a failure gives it back there.
    taken_from_pending: Mapped[int] = mapped_column(sa.BigInteger, default=0, server_default="0")
    provider_reference: Mapped[str | None] = mapped_column(sa.String(64))
    failure_reason: Mapped[str | None] = mapped_column(sa.String(500))
    submit_attempts: Mapped[int] = mapped_column(default=0)
    completed_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    end_to_end_id: Mapped[str | None] = mapped_column(sa.String(32))
    return_id: Mapped[str | None] = mapped_column(sa.String(32))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow, onupdate=utcnow)
