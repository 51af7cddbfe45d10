"""Append-only audit trail of security-relevant actions (API key issue, rotate, revoke, …)."""

from datetime import datetime

import sqlalchemy as sa
from sqlalchemy.orm import Mapped, mapped_column

from app.extensions import db
from app.models.base import JSONType, UTCDateTime, new_id, utcnow


class AuditLog(db.Model):
    __tablename__ = "audit_logs"

    id: Mapped[str] = mapped_column(sa.String(36), primary_key=True, default=new_id)
    account_id: Mapped[str] = mapped_column(sa.ForeignKey("accounts.id"), index=True)
    actor_user_id: Mapped[str | None] = mapped_column(sa.ForeignKey("users.id"))
    action: Mapped[str] = mapped_column(sa.String(64))
    subject_type: Mapped[str] = mapped_column(sa.String(32))
    subject_id: Mapped[str] = mapped_column(sa.String(64))
    details: Mapped[dict] = mapped_column(JSONType, default=dict)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow, index=True)
