"""Domain events (transactional outbox): written in the same transaction as the change."""

from datetime import datetime

import sqlalchemy as sa
from sqlalchemy.orm import Mapped, mapped_column

from app.extensions import db
from app.models.api_key import KeyMode
from app.models.base import JSONType, UTCDateTime, utcnow


class Event(db.Model):
    __tablename__ = "events"
    __table_args__ = (sa.Index("ix_events_unrelayed", "relayed_at", "created_at"),)

    id: Mapped[str] = mapped_column(sa.String(40), primary_key=True)
    account_id: Mapped[str] = mapped_column(sa.ForeignKey("accounts.id"), index=True)
    mode: Mapped[KeyMode | None] = mapped_column(sa.Enum(KeyMode, native_enum=False, length=8))
    type: Mapped[str] = mapped_column(sa.String(64))
    api_version: Mapped[str] = mapped_column(sa.String(10))
    subject_type: Mapped[str | None] = mapped_column(sa.String(32))
    subject_id: Mapped[str | None] = mapped_column(sa.String(64))
    data: Mapped[dict] = mapped_column(JSONType)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    relayed_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
