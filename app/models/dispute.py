"""Dispute cases (MED, chargebacks) and the evidence merchants attach to them.

A case is opened by a notification from the dispute channel (the provider, the sandbox or
operations staff) on a paid transaction; `(transaction_id, external_id)` is unique, so the
same notification delivered twice opens one case. `held_amount` is what the opening took
from the wallet into `retained` (0 when the reported amount did not match and nothing was
held); the resolution moves exactly that amount back to available or out to the payer.

Evidence rows exist from the upload ticket on, but only those with `uploaded_at` (confirmed
by POST …/complete) are visible or counted.
"""

import enum
from datetime import datetime

import sqlalchemy as sa
from sqlalchemy.orm import Mapped, mapped_column

from app.extensions import db
from app.models.api_key import KeyMode
from app.models.base import UTCDateTime, search_text, utcnow


class DisputeType(enum.StrEnum):
    MED = "med"
    CHARGEBACK = "chargeback"
    DISPUTE = "dispute"
    FRAUD = "fraud"


class DisputeStatus(enum.StrEnum):
    OPEN = "open"
    APPEALED = "appealed"
    ACCEPTED = "accepted"
    REJECTED = "rejected"
    CLOSED = "closed"


FINAL_DISPUTE_STATUSES = frozenset(
    {DisputeStatus.ACCEPTED, DisputeStatus.REJECTED, DisputeStatus.CLOSED}
)


class MoneyOutcome(enum.StrEnum):
    REFUNDED_TO_MERCHANT = "refunded_to_merchant"
    CLOSED_WITHOUT_REFUND = "closed_without_refund"
    LOST = "lost"


class EvidenceUploader(enum.StrEnum):
    MERCHANT = "merchant"
    PARTNER = "partner"
    PLATFORM = "platform"


def _enum(kind: type[enum.StrEnum], length: int):
    return sa.Enum(kind, native_enum=False, length=length, values_callable=_values)


def _values(kind: type[enum.StrEnum]) -> list[str]:
    return [member.value for member in kind]


# What the dashboard's search box looks through (`services.search`); indexed on PostgreSQL.
DISPUTE_SEARCH_TEXT = search_text(
    "id",
    "transaction_id",
    "external_id",
    "reference_id",
    "payer_name",
    "payer_document",
    "reason",
)


class DisputeCase(db.Model):
    __tablename__ = "med_cases"
    __table_args__ = (
        sa.UniqueConstraint("transaction_id", "external_id"),
        sa.CheckConstraint("amount > 0", name="amount_positive"),
        sa.CheckConstraint("held_amount >= 0", name="held_amount_not_negative"),
        sa.Index("ix_med_cases_listing", "account_id", "mode", "created_at", "id"),
        sa.Index("ix_med_cases_status", "status", "response_deadline"),
    )

    id: Mapped[str] = mapped_column(sa.String(40), primary_key=True)
    account_id: Mapped[str] = mapped_column(sa.ForeignKey("accounts.id"))
    mode: Mapped[KeyMode] = mapped_column(sa.Enum(KeyMode, native_enum=False, length=8))
    transaction_id: Mapped[str] = mapped_column(sa.ForeignKey("transactions.id"), index=True)
    external_id: Mapped[str] = mapped_column(sa.String(64))
    source: Mapped[str] = mapped_column(sa.String(16))
    type: Mapped[DisputeType] = mapped_column(_enum(DisputeType, 16))
    status: Mapped[DisputeStatus] = mapped_column(_enum(DisputeStatus, 16))
    amount: Mapped[int] = mapped_column(sa.BigInteger)
    currency: Mapped[str] = mapped_column(sa.String(8))
    held_amount: Mapped[int] = mapped_column(sa.BigInteger, default=0)
    # The most the case may hold: the charge's amount, or what operations confirmed for a
    # case reported with another amount (None until then). The hold is this less the
    # merchant's completed refunds (`dispute_holds`).
    hold_limit: Mapped[int | None] = mapped_column(sa.BigInteger)
    amount_mismatch: Mapped[bool] = mapped_column(default=False)
    # A mismatched case waits for operations to confirm the amount before it can be lost.
    under_review: Mapped[bool] = mapped_column(default=False)
    method: Mapped[str | None] = mapped_column(sa.String(16))
    reason: Mapped[str | None] = mapped_column(sa.String(2000))
    reference_id: Mapped[str | None] = mapped_column(sa.String(32))
    payer_name: Mapped[str | None] = mapped_column(sa.String(140))
    payer_document: Mapped[str | None] = mapped_column(sa.String(32))
    response_deadline: Mapped[datetime | None] = mapped_column(UTCDateTime)
    evidence_requested_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    appeal_reason: Mapped[str | None] = mapped_column(sa.Text)
    appealed_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    money_outcome: Mapped[MoneyOutcome | None] = mapped_column(_enum(MoneyOutcome, 32))
    decided_by: Mapped[str | None] = mapped_column(sa.ForeignKey("users.id"))
    decision_note: Mapped[str | None] = mapped_column(sa.String(500))
    opened_at: Mapped[datetime] = mapped_column(UTCDateTime)
    closed_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    opened_notice_sent_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    resolved_notice_sent_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    # Set by each change the merchant can see; sending a notice is not one.
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)

    @property
    def is_final(self) -> bool:
        return self.status in FINAL_DISPUTE_STATUSES


class DisputeEvidence(db.Model):
    __tablename__ = "med_case_evidence"
    __table_args__ = (
        sa.CheckConstraint("file_size > 0", name="file_size_positive"),
        sa.Index("ix_med_case_evidence_case", "case_id", "uploaded_at"),
    )

    id: Mapped[str] = mapped_column(sa.String(40), primary_key=True)
    case_id: Mapped[str] = mapped_column(sa.ForeignKey("med_cases.id"))
    file_name: Mapped[str] = mapped_column(sa.String(255))
    file_size: Mapped[int] = mapped_column(sa.BigInteger)
    mime_type: Mapped[str] = mapped_column(sa.String(32))
    uploaded_by: Mapped[EvidenceUploader] = mapped_column(_enum(EvidenceUploader, 16))
    storage_key: Mapped[str] = mapped_column(sa.String(200))
    upload_expires_at: Mapped[datetime] = mapped_column(UTCDateTime)
    uploaded_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
