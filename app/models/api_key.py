"""API keys: only a SHA-256 fingerprint and a display prefix are kept, never the cleartext."""

import enum
from datetime import datetime

import sqlalchemy as sa
from sqlalchemy.orm import Mapped, mapped_column, relationship

from app.extensions import db
from app.models.account import Account
from app.models.base import UTCDateTime, new_id, utcnow


class KeyMode(enum.StrEnum):
    LIVE = "live"
    TEST = "test"


class ApiKey(db.Model):
    __tablename__ = "api_keys"

    id: Mapped[str] = mapped_column(sa.String(36), primary_key=True, default=new_id)
    account_id: Mapped[str] = mapped_column(sa.ForeignKey("accounts.id"), index=True)
    fingerprint: Mapped[str] = mapped_column(sa.String(64), unique=True)
    prefix: Mapped[str] = mapped_column(sa.String(12))
    label: Mapped[str | None] = mapped_column(sa.String(64))
    mode: Mapped[KeyMode] = mapped_column(sa.Enum(KeyMode, native_enum=False, length=8))
    created_by_user_id: Mapped[str | None] = mapped_column(sa.ForeignKey("users.id"))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    last_used_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    revoked_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    replaced_by_id: Mapped[str | None] = mapped_column(sa.ForeignKey("api_keys.id"))

    account: Mapped[Account] = relationship()
