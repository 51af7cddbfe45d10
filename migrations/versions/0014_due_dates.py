"""Pix charges with a due date (issue 24): the due date, its terms and the original amount
on `transactions`, and an index for filtering an account's charges by due date.

Revision ID: 0014_due_dates
Revises: 0013_payment_totals
Create Date: 2026-11-27 01:00:00

"""

import sqlalchemy as sa
from alembic import op

import app.models.base

revision = "0014_due_dates"
down_revision = "0013_payment_totals"
branch_labels = None
depends_on = None


def upgrade():
    with op.batch_alter_table("transactions") as batch_op:
        batch_op.add_column(sa.Column("due_date", sa.Date(), nullable=True))
        batch_op.add_column(sa.Column("due_terms", app.models.base.JSONType, nullable=True))
        batch_op.add_column(sa.Column("due_original_amount", sa.BigInteger(), nullable=True))
        batch_op.create_index(
            "ix_transactions_due_date", ["account_id", "mode", "due_date"], unique=False
        )


def downgrade():
    with op.batch_alter_table("transactions") as batch_op:
        batch_op.drop_index("ix_transactions_due_date")
        batch_op.drop_column("due_original_amount")
        batch_op.drop_column("due_terms")
        batch_op.drop_column("due_date")
