"""Daily totals of payments, so the stats and metrics read a row per day and kind instead of
every transaction of the window (issue 22).

A transaction counts once, in the row of its São Paulo creation day and of what the stats
and metrics tell apart: currency, status, the method it was paid with, the methods it
offered, whether it was finalised and whether it was paid. Writers never update a total:
each change to a transaction appends `PaymentTotalChange` rows (minus its old row, plus its
new one), and a periodic job folds them into `PaymentDayTotal` and its coarser projections
(`PaymentDayVolume`, `PaymentMonthVolume`, `PaymentDayPaidVolume`). A reader adds the folded
totals and the pending changes, so it is exact at every moment, and no row is ever a hot
spot that one merchant's concurrent payments would queue on.
"""

from datetime import date

import sqlalchemy as sa
from sqlalchemy.orm import Mapped, mapped_column

from app.extensions import db
from app.models.api_key import KeyMode


def _mode_column(**options):
    return mapped_column(sa.Enum(KeyMode, native_enum=False, length=8), **options)


class PaymentDayTotal(db.Model):
    """How many transactions of one day and kind, and their amount."""

    __tablename__ = "payment_day_totals"

    account_id: Mapped[str] = mapped_column(sa.ForeignKey("accounts.id"), primary_key=True)
    mode: Mapped[KeyMode] = _mode_column(primary_key=True)
    day: Mapped[date] = mapped_column(sa.Date, primary_key=True)
    currency: Mapped[str] = mapped_column(sa.String(8), primary_key=True)
    status: Mapped[str] = mapped_column(sa.String(20), primary_key=True)
    paid_with: Mapped[str] = mapped_column(sa.String(16), primary_key=True)  # "" when unpaid
    offered: Mapped[str] = mapped_column(sa.String(128), primary_key=True)  # "BOLETO,PIX"
    finalised: Mapped[bool] = mapped_column(sa.Boolean, primary_key=True)
    paid: Mapped[bool] = mapped_column(sa.Boolean, primary_key=True)
    count: Mapped[int] = mapped_column(sa.BigInteger)
    amount: Mapped[int] = mapped_column(sa.BigInteger)


class PaymentDayVolume(db.Model):
    """The same totals with only what the stats tell apart (currency, method paid with,
    paid): a few rows a day, so a year of stats reads a few thousand rows."""

    __tablename__ = "payment_day_volumes"

    account_id: Mapped[str] = mapped_column(sa.ForeignKey("accounts.id"), primary_key=True)
    mode: Mapped[KeyMode] = _mode_column(primary_key=True)
    day: Mapped[date] = mapped_column(sa.Date, primary_key=True)
    currency: Mapped[str] = mapped_column(sa.String(8), primary_key=True)
    paid_with: Mapped[str] = mapped_column(sa.String(16), primary_key=True)
    paid: Mapped[bool] = mapped_column(sa.Boolean, primary_key=True)
    count: Mapped[int] = mapped_column(sa.BigInteger)
    amount: Mapped[int] = mapped_column(sa.BigInteger)


class PaymentMonthVolume(db.Model):
    """`PaymentDayVolume` summed per calendar month (`month` is its first day): a year's
    window reads its whole months here and only the days before and after them per day."""

    __tablename__ = "payment_month_volumes"

    account_id: Mapped[str] = mapped_column(sa.ForeignKey("accounts.id"), primary_key=True)
    mode: Mapped[KeyMode] = _mode_column(primary_key=True)
    month: Mapped[date] = mapped_column(sa.Date, primary_key=True)
    currency: Mapped[str] = mapped_column(sa.String(8), primary_key=True)
    paid_with: Mapped[str] = mapped_column(sa.String(16), primary_key=True)
    paid: Mapped[bool] = mapped_column(sa.Boolean, primary_key=True)
    count: Mapped[int] = mapped_column(sa.BigInteger)
    amount: Mapped[int] = mapped_column(sa.BigInteger)


class PaymentDayPaidVolume(db.Model):
    """The paid transactions' totals per day and currency only: the stats' daily points,
    read as they are, one row per day and currency."""

    __tablename__ = "payment_day_paid_volumes"

    account_id: Mapped[str] = mapped_column(sa.ForeignKey("accounts.id"), primary_key=True)
    mode: Mapped[KeyMode] = _mode_column(primary_key=True)
    day: Mapped[date] = mapped_column(sa.Date, primary_key=True)
    currency: Mapped[str] = mapped_column(sa.String(8), primary_key=True)
    count: Mapped[int] = mapped_column(sa.BigInteger)
    amount: Mapped[int] = mapped_column(sa.BigInteger)


class PaymentTotalChange(db.Model):
    """One change to a day's totals not yet folded into `PaymentDayTotal`: +1 and the amount
    when a transaction enters a row, -1 and minus the amount when it leaves one."""

    __tablename__ = "payment_total_changes"
    __table_args__ = (sa.Index("ix_payment_total_changes_scope", "account_id", "mode", "day"),)

    id: Mapped[int] = mapped_column(
        sa.BigInteger().with_variant(sa.Integer, "sqlite"), primary_key=True
    )
    account_id: Mapped[str] = mapped_column(sa.String(36))
    mode: Mapped[KeyMode] = _mode_column()
    day: Mapped[date] = mapped_column(sa.Date)
    currency: Mapped[str] = mapped_column(sa.String(8))
    status: Mapped[str] = mapped_column(sa.String(20))
    paid_with: Mapped[str] = mapped_column(sa.String(16))
    offered: Mapped[str] = mapped_column(sa.String(128))
    finalised: Mapped[bool] = mapped_column(sa.Boolean)
    paid: Mapped[bool] = mapped_column(sa.Boolean)
    count: Mapped[int] = mapped_column(sa.BigInteger)
    amount: Mapped[int] = mapped_column(sa.BigInteger)
