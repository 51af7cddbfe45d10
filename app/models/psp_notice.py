"""What the live PSP reported that staff must look at: a Pix it would not confirm, a Pix that
belongs to no charge of ours, a value this release does not know, something unreadable.

One row per subject and kind, so a notice repeated by every webhook re-delivery and every
reconciliation run is counted (`occurrences`, `last_seen_at`), not multiplied: logged once,
kept until a person marks it resolved."""

import enum
from datetime import datetime

import sqlalchemy as sa
from sqlalchemy.orm import Mapped, mapped_column

from app.extensions import db
from app.models.base import JSONType, UTCDateTime, new_id, utcnow


class PspNoticeKind(enum.StrEnum):
    UNCONFIRMED_PIX = "unconfirmed_pix"
    UNMATCHED_PIX = "unmatched_pix"
    UNKNOWN_VALUE = "unknown_value"
    UNREADABLE = "unreadable"


class PspNotice(db.Model):
    __tablename__ = "psp_notices"
    __table_args__ = (
        sa.UniqueConstraint("kind", "subject", name="uq_psp_notices_kind_subject"),
        sa.Index("ix_psp_notices_open", "resolved_at", "last_seen_at"),
    )

    id: Mapped[str] = mapped_column(sa.String(36), primary_key=True, default=new_id)
    kind: Mapped[PspNoticeKind] = mapped_column(
        sa.Enum(PspNoticeKind, native_enum=False, length=20)
    )
    subject: Mapped[str] = mapped_column(sa.String(200))
    detail: Mapped[str] = mapped_column(sa.String(1000))
    reported: Mapped[dict] = mapped_column(JSONType, default=dict)
    occurrences: Mapped[int] = mapped_column(sa.Integer, default=1)
    first_seen_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    last_seen_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    resolved_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    resolved_by: Mapped[str | None] = mapped_column(sa.ForeignKey("users.id"))
