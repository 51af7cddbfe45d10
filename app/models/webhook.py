"""Webhook endpoints and deliveries.

A delivery is one event for one endpoint; its envelope (`payload`) is fixed when it is
created, so every retry sends the same body with the same `evt_` id. The endpoint's secret
is stored encrypted (`app/services/secrets_box.py`), never in clear.
"""

import enum
from datetime import datetime

import sqlalchemy as sa
from sqlalchemy.orm import Mapped, mapped_column

from app.extensions import db
from app.models.api_key import KeyMode
from app.models.base import JSONType, UTCDateTime, new_id, utcnow


class EndpointStatus(enum.StrEnum):
    ACTIVE = "ACTIVE"
    INACTIVE = "INACTIVE"


class DeliveryStatus(enum.StrEnum):
    PENDING = "PENDING"
    PROCESSING = "PROCESSING"
    DELIVERED = "DELIVERED"
    FAILED = "FAILED"
    CANCELLED = "CANCELLED"


class WebhookEndpoint(db.Model):
    __tablename__ = "webhook_endpoints"
    __table_args__ = (
        sa.Index("ix_webhook_endpoints_account", "account_id", "mode", "status"),
        # One endpoint per URL in an account and mode, among those not deleted (deleting
        # only sets `deleted_at`): `endpoints._one_endpoint_per_url` says so first.
        sa.Index(
            "uq_webhook_endpoints_url",
            "account_id",
            "mode",
            "url",
            unique=True,
            postgresql_where=sa.text("deleted_at IS NULL"),
            sqlite_where=sa.text("deleted_at IS NULL"),
        ),
    )

    id: Mapped[str] = mapped_column(sa.String(36), primary_key=True, default=new_id)
    account_id: Mapped[str] = mapped_column(sa.ForeignKey("accounts.id"))
    mode: Mapped[KeyMode] = mapped_column(sa.Enum(KeyMode, native_enum=False, length=8))
    url: Mapped[str] = mapped_column(sa.String(2048))
    events: Mapped[list] = mapped_column(JSONType)
    status: Mapped[EndpointStatus] = mapped_column(
        sa.Enum(EndpointStatus, native_enum=False, length=8)
    )
    secret_ciphertext: Mapped[str] = mapped_column(sa.Text)
    consecutive_dead_letters: Mapped[int] = mapped_column(default=0)
    deleted_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow, onupdate=utcnow)


class WebhookDelivery(db.Model):
    __tablename__ = "webhook_deliveries"
    __table_args__ = (
        sa.Index("ix_webhook_deliveries_due", "status", "next_retry_at"),
        sa.Index("ix_webhook_deliveries_listing", "account_id", "mode", "created_at"),
    )

    id: Mapped[str] = mapped_column(sa.String(36), primary_key=True, default=new_id)
    account_id: Mapped[str] = mapped_column(sa.ForeignKey("accounts.id"))
    mode: Mapped[KeyMode] = mapped_column(sa.Enum(KeyMode, native_enum=False, length=8))
    endpoint_id: Mapped[str] = mapped_column(sa.ForeignKey("webhook_endpoints.id"), index=True)
    event_id: Mapped[str] = mapped_column(sa.ForeignKey("events.id"), index=True)
    event_type: Mapped[str] = mapped_column(sa.String(64))
    payload: Mapped[dict] = mapped_column(JSONType)
    status: Mapped[DeliveryStatus] = mapped_column(
        sa.Enum(DeliveryStatus, native_enum=False, length=16)
    )
    attempts: Mapped[int] = mapped_column(default=0)
    max_attempts: Mapped[int] = mapped_column(default=15)
    last_status_code: Mapped[int | None]
    last_error: Mapped[str | None] = mapped_column(sa.String(500))
    last_response_body: Mapped[str | None] = mapped_column(sa.Text)
    last_attempt_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    next_retry_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    lease_expires_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    delivered_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    resent_from_id: Mapped[str | None] = mapped_column(sa.ForeignKey("webhook_deliveries.id"))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow, onupdate=utcnow)
