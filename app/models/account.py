"""Merchant accounts, the people who log in, and who belongs to which account with what role."""

import enum
from datetime import datetime

import sqlalchemy as sa
from flask_login import UserMixin
from sqlalchemy.orm import Mapped, mapped_column, relationship

from app.extensions import db
from app.models.base import UTCDateTime, new_id, utcnow


class Role(enum.StrEnum):
    OWNER = "OWNER"
    ADMIN = "ADMIN"
    MEMBER = "MEMBER"


MANAGING_ROLES = frozenset({Role.OWNER, Role.ADMIN})
DEFAULT_CITY = "Sao Paulo"
DEFAULT_COUNTRY = "BR"
DEFAULT_CHARGE_EXPIRES_IN = 3600


class Account(db.Model):
    __tablename__ = "accounts"

    id: Mapped[str] = mapped_column(sa.String(36), primary_key=True, default=new_id)
    name: Mapped[str] = mapped_column(sa.String(120))
    city: Mapped[str] = mapped_column(sa.String(60), default=DEFAULT_CITY)
    # ISO 3166-1 alpha-2; picks the language of the account's documents and the default of
    # its members' pages (`app.i18n`).
    country: Mapped[str] = mapped_column(
        sa.String(2), default=DEFAULT_COUNTRY, server_default=DEFAULT_COUNTRY
    )
    charge_expires_in: Mapped[int] = mapped_column(default=DEFAULT_CHARGE_EXPIRES_IN)
    cnpj_checksum_waiver: Mapped[bool] = mapped_column(default=False)
    withdrawals_auto_approve: Mapped[bool] = mapped_column(default=False)
    withdrawals_auto_approve_threshold: Mapped[int | None] = mapped_column(sa.BigInteger)
    payout_transaction_cap: Mapped[int | None] = mapped_column(sa.BigInteger)
    payout_daily_cap: Mapped[int | None] = mapped_column(sa.BigInteger)
    active: Mapped[bool] = mapped_column(default=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)

    memberships: Mapped[list["Membership"]] = relationship(back_populates="account")


class User(UserMixin, db.Model):
    __tablename__ = "users"

    id: Mapped[str] = mapped_column(sa.String(36), primary_key=True, default=new_id)
    email: Mapped[str] = mapped_column(sa.String(254), unique=True)
    password_hash: Mapped[str] = mapped_column(sa.String(255))
    name: Mapped[str | None] = mapped_column(sa.String(120))
    active: Mapped[bool] = mapped_column(default=True)
    is_staff: Mapped[bool] = mapped_column(default=False)
    # The dashboard language this person chose (`app.i18n.LOCALES`); None until they choose.
    locale: Mapped[str | None] = mapped_column(sa.String(8))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)

    memberships: Mapped[list["Membership"]] = relationship(back_populates="user")

    @property
    def is_active(self) -> bool:
        return self.active


class Membership(db.Model):
    __tablename__ = "memberships"
    __table_args__ = (sa.UniqueConstraint("account_id", "user_id"),)

    id: Mapped[str] = mapped_column(sa.String(36), primary_key=True, default=new_id)
    account_id: Mapped[str] = mapped_column(sa.ForeignKey("accounts.id"), index=True)
    user_id: Mapped[str] = mapped_column(sa.ForeignKey("users.id"), index=True)
    role: Mapped[Role] = mapped_column(sa.Enum(Role, native_enum=False, length=16))
    active: Mapped[bool] = mapped_column(default=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)

    account: Mapped[Account] = relationship(back_populates="memberships")
    user: Mapped[User] = relationship(back_populates="memberships")

    @property
    def can_manage_api_keys(self) -> bool:
        return self.active and self.role in MANAGING_ROLES
