"""Idempotency keys: the first request with a key claims the row; replays read its response.

`lock_token` names the request that holds the claim, so a request whose claim was taken over
can no longer complete or release it.
"""

from datetime import datetime

import sqlalchemy as sa
from sqlalchemy.orm import Mapped, mapped_column

from app.extensions import db
from app.models.base import UTCDateTime, new_id, utcnow


class IdempotencyKey(db.Model):
    __tablename__ = "idempotency_keys"
    __table_args__ = (sa.UniqueConstraint("account_id", "scope", "key"),)

    id: Mapped[str] = mapped_column(sa.String(36), primary_key=True, default=new_id)
    account_id: Mapped[str] = mapped_column(sa.ForeignKey("accounts.id"))
    scope: Mapped[str] = mapped_column(sa.String(120))
    key: Mapped[str] = mapped_column(sa.String(128))
    request_hash: Mapped[str] = mapped_column(sa.String(64))
    lock_token: Mapped[str | None] = mapped_column(sa.String(36))
    locked_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    response_status: Mapped[int | None]
    response_body: Mapped[str | None] = mapped_column(sa.Text)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow, index=True)
    completed_at: Mapped[datetime | None] = mapped_column(UTCDateTime)

    @property
    def is_completed(self) -> bool:
        return self.response_status is not None
