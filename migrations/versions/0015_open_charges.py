"""Open charges' index (issue 22): the velocity guard counts an account's charges awaiting
payment on every charge creation; a partial index on those alone keeps the count from
reading every charge created in the window (paid, expired and failed ones included).

Revision ID: 0015_open_charges
Revises: 0014_due_dates
Create Date: 2026-12-01 21:30:00

"""

import sqlalchemy as sa
from alembic import op

revision = "0015_open_charges"
down_revision = "0014_due_dates"
branch_labels = None
depends_on = None

OPEN_CHARGE_CONDITION = sa.text("status IN ('PENDING', 'WAITING_PAYMENT')")


def upgrade():
    op.create_index(
        "ix_transactions_open",
        "transactions",
        ["account_id", "mode", "created_at"],
        postgresql_where=OPEN_CHARGE_CONDITION,
        sqlite_where=OPEN_CHARGE_CONDITION,
    )


def downgrade():
    op.drop_index("ix_transactions_open", table_name="transactions")
