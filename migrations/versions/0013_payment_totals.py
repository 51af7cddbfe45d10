"""Daily payment totals (issue 22): `payment_day_totals` and its coarse projection
`payment_day_volumes`, folded, and `payment_total_changes`, appended by every flush that
changes a transaction (`services.transactions.payment_totals`).

The history is backfilled here, in SQL written out as of this revision (a migration must not
change when the services do); `flask payments rebuild-totals` recounts the same rows with the
service's own rule, and a test checks on both backends that the two agree. On SQLite
(development only) the São Paulo day is taken at a fixed UTC-3, as the stats always did
there: São Paulo has kept no daylight saving time since 2019.

Revision ID: 0013_payment_totals
Revises: 0012_search
Create Date: 2026-11-29 07:00:00

"""

import sqlalchemy as sa
from alembic import op

revision = "0013_payment_totals"
down_revision = "0012_search"
branch_labels = None
depends_on = None

BACKFILL = {
    "postgresql": """
        INSERT INTO payment_day_totals (account_id, mode, day, currency, status, paid_with,
                                        offered, finalised, paid, count, amount)
        SELECT account_id, mode, (created_at AT TIME ZONE 'America/Sao_Paulo')::date,
               currency, status, coalesce(paid_with, ''),
               coalesce((SELECT string_agg(DISTINCT method, ',' ORDER BY method)
                         FROM jsonb_array_elements_text(payment_methods) AS method), ''),
               finalised_at IS NOT NULL, paid_at IS NOT NULL, count(*), sum(amount)
        FROM transactions
        GROUP BY 1, 2, 3, 4, 5, 6, 7, 8, 9
    """,
    "sqlite": """
        INSERT INTO payment_day_totals (account_id, mode, day, currency, status, paid_with,
                                        offered, finalised, paid, count, amount)
        SELECT account_id, mode, date(created_at, '-3 hours'),
               currency, status, coalesce(paid_with, ''),
               coalesce((SELECT group_concat(value, ',')
                         FROM (SELECT DISTINCT value FROM json_each(transactions.payment_methods)
                               ORDER BY value)), ''),
               finalised_at IS NOT NULL, paid_at IS NOT NULL, count(*), sum(amount)
        FROM transactions
        GROUP BY 1, 2, 3, 4, 5, 6, 7, 8, 9
    """,
}
BACKFILL_VOLUMES = """
    INSERT INTO payment_day_volumes (account_id, mode, day, currency, paid_with, paid, count, amount)
    SELECT account_id, mode, day, currency, paid_with, paid, sum(count), sum(amount)
    FROM payment_day_totals
    GROUP BY account_id, mode, day, currency, paid_with, paid
"""


def _mode_column() -> sa.Column:
    return sa.Column(
        "mode",
        sa.Enum("LIVE", "TEST", name="keymode", native_enum=False, length=8),
        nullable=False,
    )


def _key_columns() -> list[sa.Column]:
    return [
        sa.Column("account_id", sa.String(length=36), nullable=False),
        _mode_column(),
        sa.Column("day", sa.Date(), nullable=False),
        sa.Column("currency", sa.String(length=8), nullable=False),
        sa.Column("status", sa.String(length=20), nullable=False),
        sa.Column("paid_with", sa.String(length=16), nullable=False),
        sa.Column("offered", sa.String(length=128), nullable=False),
        sa.Column("finalised", sa.Boolean(), nullable=False),
        sa.Column("paid", sa.Boolean(), nullable=False),
    ]


def upgrade():
    op.create_table(
        "payment_day_totals",
        *_key_columns(),
        sa.Column("count", sa.BigInteger(), nullable=False),
        sa.Column("amount", sa.BigInteger(), nullable=False),
        sa.ForeignKeyConstraint(
            ["account_id"],
            ["accounts.id"],
            name=op.f("fk_payment_day_totals_account_id_accounts"),
        ),
        sa.PrimaryKeyConstraint(
            "account_id",
            "mode",
            "day",
            "currency",
            "status",
            "paid_with",
            "offered",
            "finalised",
            "paid",
            name=op.f("pk_payment_day_totals"),
        ),
    )
    op.create_table(
        "payment_day_volumes",
        sa.Column("account_id", sa.String(length=36), nullable=False),
        _mode_column(),
        sa.Column("day", sa.Date(), nullable=False),
        sa.Column("currency", sa.String(length=8), nullable=False),
        sa.Column("paid_with", sa.String(length=16), nullable=False),
        sa.Column("paid", sa.Boolean(), nullable=False),
        sa.Column("count", sa.BigInteger(), nullable=False),
        sa.Column("amount", sa.BigInteger(), nullable=False),
        sa.ForeignKeyConstraint(
            ["account_id"],
            ["accounts.id"],
            name=op.f("fk_payment_day_volumes_account_id_accounts"),
        ),
        sa.PrimaryKeyConstraint(
            "account_id",
            "mode",
            "day",
            "currency",
            "paid_with",
            "paid",
            name=op.f("pk_payment_day_volumes"),
        ),
    )
    op.create_table(
        "payment_total_changes",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        *_key_columns(),
        sa.Column("count", sa.BigInteger(), nullable=False),
        sa.Column("amount", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_payment_total_changes")),
    )
    op.create_index(
        "ix_payment_total_changes_scope",
        "payment_total_changes",
        ["account_id", "mode", "day"],
    )
    op.execute(BACKFILL[op.get_bind().dialect.name])
    op.execute(BACKFILL_VOLUMES)


def downgrade():
    op.drop_index("ix_payment_total_changes_scope", table_name="payment_total_changes")
    op.drop_table("payment_total_changes")
    op.drop_table("payment_day_volumes")
    op.drop_table("payment_day_totals")
