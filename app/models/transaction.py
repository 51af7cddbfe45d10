"""Transactions: one record per charge or payment, read as a Charge on /v1/charges and as a
transaction on /v1/payments. Statuses are the transaction vocabulary; the public charge
status is derived from them (`app.formats.charges.PUBLIC_STATUS`).

Provider details (name, txid, fees, the received Pix) live here and in `received_pix`, and
never reach the public charge object, which is built from an allowlist.
"""

import enum
from datetime import date, datetime

import sqlalchemy as sa
from sqlalchemy.orm import Mapped, mapped_column

from app.extensions import db
from app.models.api_key import KeyMode
from app.models.base import JSONType, UTCDateTime, new_id, search_text, utcnow


class TransactionStatus(enum.StrEnum):
    PENDING = "PENDING"
    WAITING_PAYMENT = "WAITING_PAYMENT"
    PROCESSING = "PROCESSING"
    PAID = "PAID"
    APPROVED = "APPROVED"
    REFUSED = "REFUSED"
    CANCELLED = "CANCELLED"
    EXPIRED = "EXPIRED"
    REFUNDED = "REFUNDED"
    CHARGEBACK = "CHARGEBACK"
    DISPUTE = "DISPUTE"


class Origin(enum.StrEnum):
    """Which surface created the record: it decides the id the legacy events carry."""

    CHARGES = "charges"
    PAYMENTS = "payments"


class ReceivedPixOutcome(enum.StrEnum):
    CREDITED = "credited"
    REFUSED_AMOUNT = "refused_amount"
    RETURNED_PAYER_MISMATCH = "returned_payer_mismatch"
    RETURNED_AFTER_EXPIRY = "returned_after_expiry"
    RETURNED_NOT_PAYABLE = "returned_not_payable"
    HELD_FOR_REVIEW = "held_for_review"
    RETURNED_AFTER_REVIEW = "returned_after_review"


def _status_column(**options):
    return mapped_column(sa.Enum(TransactionStatus, native_enum=False, length=20), **options)


# What the dashboard's search box looks through (`services.search`); indexed on PostgreSQL.
TRANSACTION_SEARCH_TEXT = search_text(
    "id",
    "end_to_end_id",
    "customer_name",
    "customer_email",
    "customer_id",
    "customer_document",
    "payer_document",
    "metadata ->> 'description'",
)


# A charge still awaiting payment (`lifecycle.AWAITING_PAYMENT`), as the open charges' index
# states it.
OPEN_CHARGE_CONDITION = sa.text("status IN ('PENDING', 'WAITING_PAYMENT')")


class Transaction(db.Model):
    __tablename__ = "transactions"
    __table_args__ = (
        sa.CheckConstraint("amount > 0", name="amount_positive"),
        sa.Index("ix_transactions_listing", "account_id", "mode", "created_at", "id"),
        sa.Index("ix_transactions_payer", "account_id", "mode", "payer_document", "created_at"),
        sa.Index("ix_transactions_expiry", "status", "expires_at"),
        sa.Index("ix_transactions_due_date", "account_id", "mode", "due_date"),
        # The velocity guard counts an account's open charges on every charge creation: this
        # index holds only those, so the count reads them and not every charge of the window.
        sa.Index(
            "ix_transactions_open",
            "account_id",
            "mode",
            "created_at",
            postgresql_where=OPEN_CHARGE_CONDITION,
            sqlite_where=OPEN_CHARGE_CONDITION,
        ),
    )

    id: Mapped[str] = mapped_column(sa.String(36), primary_key=True, default=new_id)
    account_id: Mapped[str] = mapped_column(sa.ForeignKey("accounts.id"), active_history=True)
    mode: Mapped[KeyMode] = mapped_column(
        sa.Enum(KeyMode, native_enum=False, length=8), active_history=True
    )
    origin: Mapped[Origin] = mapped_column(sa.Enum(Origin, native_enum=False, length=16))
    status: Mapped[TransactionStatus] = _status_column(active_history=True)
    amount: Mapped[int] = mapped_column(sa.BigInteger, active_history=True)
    currency: Mapped[str] = mapped_column(sa.String(8), active_history=True)
    payment_methods: Mapped[list] = mapped_column(JSONType, active_history=True)
    paid_with: Mapped[str | None] = mapped_column(sa.String(16), active_history=True)

    customer_id: Mapped[str | None] = mapped_column(sa.String(128))
    customer_name: Mapped[str | None] = mapped_column(sa.String(140))
    customer_document: Mapped[str | None] = mapped_column(sa.String(32))
    customer_email: Mapped[str | None] = mapped_column(sa.String(254))
    customer_phone: Mapped[str | None] = mapped_column(sa.String(32))
    expected_payer_tax_id: Mapped[str | None] = mapped_column(sa.String(14))
    payer_document: Mapped[str | None] = mapped_column(sa.String(32))
    metadata_: Mapped[dict] = mapped_column("metadata", JSONType, default=dict)
    webhook_url: Mapped[str | None] = mapped_column(sa.String(2048))

    expires_in: Mapped[int | None]
    # A Pix charge with a due date (cobv): its terms (`app.pix.due.to_json`) and the amount
    # they apply to. `amount` starts equal to it and becomes what the payer paid, fine,
    # interest and discounts included, so fees, refunds and totals follow the money.
    due_date: Mapped[date | None] = mapped_column(sa.Date)
    due_terms: Mapped[dict | None] = mapped_column(JSONType)
    due_original_amount: Mapped[int | None] = mapped_column(sa.BigInteger)
    expires_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    provider: Mapped[str | None] = mapped_column(sa.String(32))
    # The provider's reference of each method's instructions: {"PIX": txid, "BOLETO": …}.
    provider_references: Mapped[dict] = mapped_column(JSONType, default=dict)
    finalised_at: Mapped[datetime | None] = mapped_column(UTCDateTime, active_history=True)
    pix_txid: Mapped[str | None] = mapped_column(sa.String(35))
    pix_br_code: Mapped[str | None] = mapped_column(sa.String(512))
    pix_location_id: Mapped[str | None] = mapped_column(sa.String(32), unique=True)
    pix_expires_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    end_to_end_id: Mapped[str | None] = mapped_column(sa.String(32))

    # Instructions of the other methods, filled when the provider finalises the transaction.
    card_redirect_url: Mapped[str | None] = mapped_column(sa.String(2048))
    mb_entity: Mapped[str | None] = mapped_column(sa.String(5))
    mb_reference: Mapped[str | None] = mapped_column(sa.String(9))
    mb_expires_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    boleto_barcode: Mapped[str | None] = mapped_column(sa.String(44))
    boleto_line: Mapped[str | None] = mapped_column(sa.String(47))
    boleto_expires_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    crypto_address: Mapped[str | None] = mapped_column(sa.String(64))
    crypto_amount: Mapped[str | None] = mapped_column(sa.String(32))
    crypto_network: Mapped[str | None] = mapped_column(sa.String(16))
    crypto_currency: Mapped[str | None] = mapped_column(sa.String(8))

    provider_fee: Mapped[int | None] = mapped_column(sa.BigInteger)
    platform_fee: Mapped[int | None] = mapped_column(sa.BigInteger)
    paid_at: Mapped[datetime | None] = mapped_column(UTCDateTime, active_history=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow, active_history=True)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow, onupdate=utcnow)

    @property
    def reference_method(self) -> str:
        """The method the provider is asked about: the one that paid, else the first."""
        return self.paid_with or self.payment_methods[0]

    @property
    def provider_reference(self) -> str | None:
        """The provider's reference of `reference_method`'s instructions, if issued."""
        return (self.provider_references or {}).get(self.reference_method)

    @property
    def net_amount(self) -> int | None:
        if self.provider_fee is None or self.platform_fee is None:
            return None
        return self.amount - self.provider_fee - self.platform_fee


class ReceivedPix(db.Model):
    """A Pix that arrived for a charge, whatever became of it; its end-to-end id is unique,
    so a notification delivered twice is handled once."""

    __tablename__ = "received_pix"

    end_to_end_id: Mapped[str] = mapped_column(sa.String(32), primary_key=True)
    transaction_id: Mapped[str] = mapped_column(sa.ForeignKey("transactions.id"), index=True)
    amount: Mapped[int] = mapped_column(sa.BigInteger)
    payer_document: Mapped[str | None] = mapped_column(sa.String(32))
    payer_name: Mapped[str | None] = mapped_column(sa.String(140))
    outcome: Mapped[ReceivedPixOutcome] = mapped_column(
        sa.Enum(ReceivedPixOutcome, native_enum=False, length=32)
    )
    received_at: Mapped[datetime] = mapped_column(UTCDateTime)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
