"""Refunds that wait for money instead of being refused, and dispute holds that follow
completed refunds: `refunds.pending_reason` and `taken_from_pending`, `med_cases.hold_limit`
(the charge's amount for cases opened so far, or the confirmed amount of a reviewed case),
and an index to find a payment's settlement tranche by the payment.

Revision ID: 0008_refund_funding
Revises: 0007_disputes
Create Date: 2026-11-25 22:30:00

"""

import sqlalchemy as sa
from alembic import op

revision = "0008_refund_funding"
down_revision = "0007_disputes"
branch_labels = None
depends_on = None


def upgrade():
    with op.batch_alter_table("refunds", schema=None) as batch_op:
        batch_op.add_column(sa.Column("pending_reason", sa.String(length=32), nullable=True))
        batch_op.add_column(
            sa.Column("taken_from_pending", sa.BigInteger(), nullable=False, server_default="0")
        )
    with op.batch_alter_table("med_cases", schema=None) as batch_op:
        batch_op.add_column(sa.Column("hold_limit", sa.BigInteger(), nullable=True))
    with op.batch_alter_table("settlement_releases", schema=None) as batch_op:
        batch_op.create_index("ix_settlement_releases_reference", ["reference_id"], unique=False)
    # Cases opened so far: a matching report may hold the whole charge; a reviewed one what
    # operations confirmed (its hold); one still under review nothing yet.
    op.execute(
        "UPDATE med_cases SET hold_limit = (SELECT amount FROM transactions"
        " WHERE transactions.id = med_cases.transaction_id) WHERE NOT amount_mismatch"
    )
    op.execute(
        "UPDATE med_cases SET hold_limit = held_amount WHERE amount_mismatch AND NOT under_review"
    )


def downgrade():
    with op.batch_alter_table("settlement_releases", schema=None) as batch_op:
        batch_op.drop_index("ix_settlement_releases_reference")
    with op.batch_alter_table("med_cases", schema=None) as batch_op:
        batch_op.drop_column("hold_limit")
    with op.batch_alter_table("refunds", schema=None) as batch_op:
        batch_op.drop_column("taken_from_pending")
        batch_op.drop_column("pending_reason")
