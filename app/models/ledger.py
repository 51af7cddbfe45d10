"""The double-entry ledger: append-only entries grouped in postings that sum to zero.

A wallet row (per account, mode, currency and type) caches the merchant's three balances
(available, pending, retained); it changes only in the transaction that writes the postings,
with the row locked, and `flask ledger check` proves it equals the sum of its entries.
Entries outside a wallet book the other side: provider clearing, provider and platform fees.
"""

import enum
from datetime import datetime

import sqlalchemy as sa
from sqlalchemy.orm import Mapped, mapped_column

from app.extensions import db
from app.models.api_key import KeyMode
from app.models.base import UTCDateTime, new_id, utcnow


class LedgerAccount(enum.StrEnum):
    """Where an entry books money; the first three are a wallet's balances."""

    AVAILABLE = "available"
    PENDING = "pending"
    RETAINED = "retained"
    PROVIDER_CLEARING = "provider_clearing"
    PROVIDER_FEES = "provider_fees"
    PLATFORM_FEES = "platform_fees"
    PAYOUT_CLEARING = "payout_clearing"
    REFUND_CLEARING = "refund_clearing"


WALLET_BALANCES = frozenset(
    {LedgerAccount.AVAILABLE, LedgerAccount.PENDING, LedgerAccount.RETAINED}
)


class WalletType(enum.StrEnum):
    OPERATIONAL = "OPERATIONAL"


class Wallet(db.Model):
    __tablename__ = "wallets"
    __table_args__ = (sa.UniqueConstraint("account_id", "mode", "currency", "wallet_type"),)

    id: Mapped[str] = mapped_column(sa.String(36), primary_key=True, default=new_id)
    account_id: Mapped[str] = mapped_column(sa.ForeignKey("accounts.id"))
    mode: Mapped[KeyMode] = mapped_column(sa.Enum(KeyMode, native_enum=False, length=8))
    currency: Mapped[str] = mapped_column(sa.String(8))
    wallet_type: Mapped[WalletType] = mapped_column(
        sa.Enum(WalletType, native_enum=False, length=16), default=WalletType.OPERATIONAL
    )
    available: Mapped[int] = mapped_column(sa.BigInteger, default=0)
    pending: Mapped[int] = mapped_column(sa.BigInteger, default=0)
    retained: Mapped[int] = mapped_column(sa.BigInteger, default=0)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow, onupdate=utcnow)


class LedgerPosting(db.Model):
    """One business movement; (kind, reference_id) is unique, so it is never booked twice."""

    __tablename__ = "ledger_postings"
    __table_args__ = (sa.UniqueConstraint("kind", "reference_id"),)

    id: Mapped[str] = mapped_column(sa.String(36), primary_key=True, default=new_id)
    account_id: Mapped[str] = mapped_column(sa.ForeignKey("accounts.id"), index=True)
    mode: Mapped[KeyMode] = mapped_column(sa.Enum(KeyMode, native_enum=False, length=8))
    currency: Mapped[str] = mapped_column(sa.String(8))
    kind: Mapped[str] = mapped_column(sa.String(32))
    reference_id: Mapped[str] = mapped_column(sa.String(64))
    description: Mapped[str] = mapped_column(sa.String(200))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class LedgerEntry(db.Model):
    __tablename__ = "ledger_entries"
    __table_args__ = (
        sa.CheckConstraint(
            "(wallet_id IS NULL) = (ledger_account NOT IN ('AVAILABLE', 'PENDING', 'RETAINED'))",
            name="wallet_balances_only",
        ),
        sa.Index("ix_ledger_entries_wallet_statement", "wallet_id", "id"),
    )

    id: Mapped[int] = mapped_column(
        sa.BigInteger().with_variant(sa.Integer, "sqlite"), primary_key=True
    )
    posting_id: Mapped[str] = mapped_column(sa.ForeignKey("ledger_postings.id"), index=True)
    wallet_id: Mapped[str | None] = mapped_column(sa.ForeignKey("wallets.id"))
    ledger_account: Mapped[LedgerAccount] = mapped_column(
        sa.Enum(LedgerAccount, native_enum=False, length=32)
    )
    amount: Mapped[int] = mapped_column(sa.BigInteger)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class SettlementRelease(db.Model):
    """A tranche of settled money waiting in `pending` until its release time; a refund of
    the payment takes from it first, so `amount` is what is left to release."""

    __tablename__ = "settlement_releases"
    __table_args__ = (
        sa.Index("ix_settlement_releases_due", "released_at", "release_at"),
        # A refund takes from its payment's tranche: found by the payment, on every refund.
        sa.Index("ix_settlement_releases_reference", "reference_id"),
    )

    id: Mapped[str] = mapped_column(sa.String(36), primary_key=True, default=new_id)
    wallet_id: Mapped[str] = mapped_column(sa.ForeignKey("wallets.id"), index=True)
    reference_id: Mapped[str] = mapped_column(sa.String(64))
    amount: Mapped[int] = mapped_column(sa.BigInteger)
    release_at: Mapped[datetime] = mapped_column(UTCDateTime)
    released_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
