"""Provider references per method: a payment offering several methods has one reference
per method's instructions (`{"PIX": txid, "BOLETO": …}`), so refunds, status reads and
withdrawals address the right one. The single `provider_reference` column goes; existing
rows keep their reference under the method it belonged to (Pix: the txid; otherwise the
first method other than Pix, which is the one it was issued for).

Revision ID: 0006_provider_references
Revises: 0005_payments
Create Date: 2026-11-22 04:09:55.687293

"""

import json

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision = "0006_provider_references"
down_revision = "0005_payments"
branch_labels = None
depends_on = None

JSON = sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql")
transactions = sa.table(
    "transactions",
    sa.column("id", sa.String),
    sa.column("payment_methods", JSON),
    sa.column("pix_txid", sa.String),
    sa.column("provider_reference", sa.String),
    sa.column("provider_references", JSON),
)


def upgrade():
    with op.batch_alter_table("transactions", schema=None) as batch_op:
        batch_op.add_column(
            sa.Column("provider_references", JSON, nullable=False, server_default="{}")
        )
    connection = op.get_bind()
    rows = connection.execute(
        sa.select(
            transactions.c.id,
            transactions.c.payment_methods,
            transactions.c.pix_txid,
            transactions.c.provider_reference,
        ).where(transactions.c.provider_reference.is_not(None))
    ).all()
    for transaction_id, methods, pix_txid, reference in rows:
        methods = json.loads(methods) if isinstance(methods, str) else methods
        references = {"PIX": pix_txid} if pix_txid else {}
        if reference != pix_txid:
            other = next((method for method in methods if method != "PIX"), None)
            if other:
                references[other] = reference
        connection.execute(
            sa.update(transactions)
            .where(transactions.c.id == transaction_id)
            .values(provider_references=references)
        )
    with op.batch_alter_table("transactions", schema=None) as batch_op:
        batch_op.drop_column("provider_reference")


def downgrade():
    with op.batch_alter_table("transactions", schema=None) as batch_op:
        batch_op.add_column(sa.Column("provider_reference", sa.VARCHAR(length=64), nullable=True))
    op.execute("UPDATE transactions SET provider_reference = pix_txid")
    with op.batch_alter_table("transactions", schema=None) as batch_op:
        batch_op.drop_column("provider_references")
