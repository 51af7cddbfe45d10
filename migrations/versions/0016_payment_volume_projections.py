"""Two more projections of the daily payment totals (issue 22), so a year of stats reads
about as many rows as a week plus its daily points: `payment_month_volumes` (the coarse
volumes per calendar month, for a window's whole months) and `payment_day_paid_volumes`
(the paid volumes per day and currency, the daily points as they are read).

Both are backfilled from `payment_day_volumes`, in SQL written out as of this revision,
under the lock the fold and the rebuild take, so no fold moves changes in between. The
changes still pending are folded into all four tables by the new code. A fold run by a
worker still on the old code after this migration (between the release's migration and the
workers' restart) moves its changes into the two older tables only: run
`flask payments rebuild-totals` once every process runs the new code
(docs/operations.md, "Deploying a new version"). A test checks on both backends that the
backfill and `flask payments rebuild-totals` agree.

Revision ID: 0016_payment_volume_projections
Revises: 0015_open_charges
Create Date: 2026-12-04 16:00:00

"""

import sqlalchemy as sa
from alembic import op

revision = "0016_payment_volume_projections"
down_revision = "0015_open_charges"
branch_labels = None
depends_on = None

FOLD_LOCK = "SELECT pg_advisory_xact_lock(hashtextextended('payment_totals', 0))"
FIRST_OF_MONTH = {
    "postgresql": "date_trunc('month', day::timestamp)::date",
    "sqlite": "date(day, 'start of month')",
}
BACKFILL_MONTHS = """
    INSERT INTO payment_month_volumes (account_id, mode, month, currency, paid_with, paid,
                                       count, amount)
    SELECT account_id, mode, {first_of_month}, currency, paid_with, paid, sum(count),
           sum(amount)
    FROM payment_day_volumes
    GROUP BY account_id, mode, {first_of_month}, currency, paid_with, paid
"""
BACKFILL_PAID_DAYS = """
    INSERT INTO payment_day_paid_volumes (account_id, mode, day, currency, count, amount)
    SELECT account_id, mode, day, currency, sum(count), sum(amount)
    FROM payment_day_volumes
    WHERE paid
    GROUP BY account_id, mode, day, currency
"""


def backfill_statements(dialect: str) -> list[str]:
    """The backfill, in order, for a backend."""
    return [
        BACKFILL_MONTHS.format(first_of_month=FIRST_OF_MONTH[dialect]),
        BACKFILL_PAID_DAYS,
    ]


def _mode_column() -> sa.Column:
    return sa.Column(
        "mode",
        sa.Enum("LIVE", "TEST", name="keymode", native_enum=False, length=8),
        nullable=False,
    )


def _figures() -> list[sa.Column]:
    return [
        sa.Column("count", sa.BigInteger(), nullable=False),
        sa.Column("amount", sa.BigInteger(), nullable=False),
    ]


def _account(table: str) -> sa.ForeignKeyConstraint:
    return sa.ForeignKeyConstraint(
        ["account_id"], ["accounts.id"], name=op.f(f"fk_{table}_account_id_accounts")
    )


def upgrade():
    op.create_table(
        "payment_month_volumes",
        sa.Column("account_id", sa.String(length=36), nullable=False),
        _mode_column(),
        sa.Column("month", sa.Date(), nullable=False),
        sa.Column("currency", sa.String(length=8), nullable=False),
        sa.Column("paid_with", sa.String(length=16), nullable=False),
        sa.Column("paid", sa.Boolean(), nullable=False),
        *_figures(),
        _account("payment_month_volumes"),
        sa.PrimaryKeyConstraint(
            "account_id",
            "mode",
            "month",
            "currency",
            "paid_with",
            "paid",
            name=op.f("pk_payment_month_volumes"),
        ),
    )
    op.create_table(
        "payment_day_paid_volumes",
        sa.Column("account_id", sa.String(length=36), nullable=False),
        _mode_column(),
        sa.Column("day", sa.Date(), nullable=False),
        sa.Column("currency", sa.String(length=8), nullable=False),
        *_figures(),
        _account("payment_day_paid_volumes"),
        sa.PrimaryKeyConstraint(
            "account_id", "mode", "day", "currency", name=op.f("pk_payment_day_paid_volumes")
        ),
    )
    dialect = op.get_bind().dialect.name
    if dialect == "postgresql":
        op.execute(FOLD_LOCK)
    for statement in backfill_statements(dialect):
        op.execute(statement)


def downgrade():
    op.drop_table("payment_day_paid_volumes")
    op.drop_table("payment_month_volumes")
