"""Payouts: money leaving a wallet to a Pix key, a bank account or a crypto address, after
approval. The fee is fixed at creation and stored here.

The code says payout everywhere; `withdrawals` survives only where others read it: the wire
(`/v1/withdrawals`, `withdrawal.*` events, error codes) and the table name, which stored rows,
migrations and stored events' `subject_type` already use."""

import enum
from datetime import datetime

import sqlalchemy as sa
from sqlalchemy.orm import Mapped, mapped_column

from app.extensions import db
from app.models.api_key import KeyMode
from app.models.base import JSONType, UTCDateTime, new_id, search_text, utcnow


class PayoutStatus(enum.StrEnum):
    PENDING = "PENDING"
    APPROVED = "APPROVED"
    PROCESSING = "PROCESSING"
    COMPLETED = "COMPLETED"
    FAILED = "FAILED"
    REJECTED = "REJECTED"
    CANCELLED = "CANCELLED"


class PayoutType(enum.StrEnum):
    PIX = "PIX"
    TED = "TED"
    CRYPTO = "CRYPTO"


# What the dashboard's search box looks through (`services.search`); indexed on PostgreSQL.
PAYOUT_SEARCH_TEXT = search_text(
    "id",
    "pix_key",
    "description",
    "provider_reference",
    "crypto_address",
)


class Payout(db.Model):
    __tablename__ = "withdrawals"
    __table_args__ = (
        sa.CheckConstraint("amount > 0", name="amount_positive"),
        sa.Index("ix_withdrawals_listing", "account_id", "mode", "created_at"),
        sa.Index("ix_withdrawals_status", "status", "updated_at"),
    )

    id: Mapped[str] = mapped_column(sa.String(36), primary_key=True, default=new_id)
    account_id: Mapped[str] = mapped_column(sa.ForeignKey("accounts.id"))
    mode: Mapped[KeyMode] = mapped_column(sa.Enum(KeyMode, native_enum=False, length=8))
    status: Mapped[PayoutStatus] = mapped_column(
        sa.Enum(PayoutStatus, native_enum=False, length=16)
    )
    type: Mapped[PayoutType] = mapped_column(sa.Enum(PayoutType, native_enum=False, length=8))
    amount: Mapped[int] = mapped_column(sa.BigInteger)
    fee: Mapped[int] = mapped_column(sa.BigInteger)
    currency: Mapped[str] = mapped_column(sa.String(8))
    pix_key: Mapped[str | None] = mapped_column(sa.String(77))
    pix_key_type: Mapped[str | None] = mapped_column(sa.String(8))
    bank_account: Mapped[dict | None] = mapped_column(JSONType)
    crypto_address: Mapped[str | None] = mapped_column(sa.String(42))
    crypto_network: Mapped[str | None] = mapped_column(sa.String(8))
    crypto_currency: Mapped[str | None] = mapped_column(sa.String(8))
    description: Mapped[str | None] = mapped_column(sa.String(500))
    requested_by_user_id: Mapped[str | None] = mapped_column(sa.ForeignKey("users.id"))
    decided_by_user_id: Mapped[str | None] = mapped_column(sa.ForeignKey("users.id"))
    provider: Mapped[str | None] = mapped_column(sa.String(32))
    provider_reference: Mapped[str | None] = mapped_column(sa.String(64))
    failure_reason: Mapped[str | None] = mapped_column(sa.String(500))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow, onupdate=utcnow)
    completed_at: Mapped[datetime | None] = mapped_column(UTCDateTime)

    @property
    def net_amount(self) -> int:
        return self.amount - self.fee

    @property
    def wallet_debit(self) -> int:
        """What approval takes from the wallet: the amount sent plus the fee on top."""
        return self.amount + self.fee
