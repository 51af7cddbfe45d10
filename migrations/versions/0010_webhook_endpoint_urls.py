"""One webhook endpoint per URL in an account and mode (issue 21): a unique index over the
endpoints not deleted, so two requests registering the same URL at once cannot both succeed.

Endpoints that already share a URL stop the upgrade, listed: each has its own secret, and
only their merchant knows which one the receiver checks, so none is deleted here.

Revision ID: 0010_webhook_endpoint_urls
Revises: 0009_psp_notices
Create Date: 2026-11-27 06:00:00

"""

import sqlalchemy as sa
from alembic import op

revision = "0010_webhook_endpoint_urls"
down_revision = "0009_psp_notices"
branch_labels = None
depends_on = None

UNDELETED = sa.text("deleted_at IS NULL")


def upgrade():
    twins = (
        op.get_bind()
        .execute(
            sa.text(
                "SELECT account_id, mode, url, id FROM webhook_endpoints WHERE deleted_at IS NULL "
                "AND (account_id, mode, url) IN (SELECT account_id, mode, url FROM webhook_endpoints "
                "WHERE deleted_at IS NULL GROUP BY account_id, mode, url HAVING COUNT(*) > 1) "
                "ORDER BY account_id, mode, url, created_at, id"
            )
        )
        .all()
    )
    if twins:
        listed = "\n".join(f"  account {a} {m} {url}: endpoint {id_}" for a, m, url, id_ in twins)
        raise RuntimeError(
            "Webhook endpoints share a URL in one account and mode; delete all but one of each "
            "(the merchant knows which secret their receiver checks), then upgrade again:\n"
            + listed
        )
    op.create_index(
        "uq_webhook_endpoints_url",
        "webhook_endpoints",
        ["account_id", "mode", "url"],
        unique=True,
        postgresql_where=UNDELETED,
        sqlite_where=UNDELETED,
    )


def downgrade():
    op.drop_index("uq_webhook_endpoints_url", table_name="webhook_endpoints")
