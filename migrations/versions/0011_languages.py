"""Languages (issue 21): each account's country, which picks its documents' language and its
members' default, and the dashboard language a person chose. Existing accounts are Brazilian.

Revision ID: 0011_languages
Revises: 0010_webhook_endpoint_urls
Create Date: 2026-11-28 06:00:00

"""

import sqlalchemy as sa
from alembic import op

revision = "0011_languages"
down_revision = "0010_webhook_endpoint_urls"
branch_labels = None
depends_on = None


def upgrade():
    with op.batch_alter_table("accounts") as batch_op:
        batch_op.add_column(
            sa.Column("country", sa.String(length=2), server_default="BR", nullable=False)
        )
    with op.batch_alter_table("users") as batch_op:
        batch_op.add_column(sa.Column("locale", sa.String(length=8), nullable=True))


def downgrade():
    with op.batch_alter_table("users") as batch_op:
        batch_op.drop_column("locale")
    with op.batch_alter_table("accounts") as batch_op:
        batch_op.drop_column("country")
