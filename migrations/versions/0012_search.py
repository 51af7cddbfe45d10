"""The dashboard's search box (issue 21): a trigram index (`pg_trgm`, GIN) on what it looks
through in payments, dispute cases and payouts, so `LIKE '%text%'` reads an index at a million
rows instead of the table. PostgreSQL only: SQLite has no trigram index and scans, as it does
at its sizes.

The expressions are `app.models.*.{TRANSACTION,DISPUTE,PAYOUT}_SEARCH_TEXT` as of this
revision, written out (a migration must not change when the models do); a test checks on
PostgreSQL that the searches use these indexes. Autogenerate cannot compare expression
indexes, so migrations/env.py leaves `ix_*_search` out of its comparison.

Revision ID: 0012_search
Revises: 0011_languages
Create Date: 2026-11-28 07:00:00

"""

from alembic import op

revision = "0012_search"
down_revision = "0011_languages"
branch_labels = None
depends_on = None

SEARCHED = {
    "transactions": (
        "lower(coalesce(id, '') || ' ' || "
        "coalesce(end_to_end_id, '') || ' ' || "
        "coalesce(customer_name, '') || ' ' || "
        "coalesce(customer_email, '') || ' ' || "
        "coalesce(customer_id, '') || ' ' || "
        "coalesce(customer_document, '') || ' ' || "
        "coalesce(payer_document, '') || ' ' || "
        "coalesce(metadata ->> 'description', ''))"
    ),
    "med_cases": (
        "lower(coalesce(id, '') || ' ' || "
        "coalesce(transaction_id, '') || ' ' || "
        "coalesce(external_id, '') || ' ' || "
        "coalesce(reference_id, '') || ' ' || "
        "coalesce(payer_name, '') || ' ' || "
        "coalesce(payer_document, '') || ' ' || "
        "coalesce(reason, ''))"
    ),
    "withdrawals": (
        "lower(coalesce(id, '') || ' ' || "
        "coalesce(pix_key, '') || ' ' || "
        "coalesce(description, '') || ' ' || "
        "coalesce(provider_reference, '') || ' ' || "
        "coalesce(crypto_address, ''))"
    ),
}


def upgrade():
    if op.get_bind().dialect.name != "postgresql":
        return
    op.execute("CREATE EXTENSION IF NOT EXISTS pg_trgm")
    for table, expression in SEARCHED.items():
        op.execute(
            f"CREATE INDEX ix_{table}_search ON {table} USING gin (({expression}) gin_trgm_ops)"
        )


def downgrade():
    if op.get_bind().dialect.name != "postgresql":
        return
    for table in SEARCHED:
        op.execute(f"DROP INDEX ix_{table}_search")
