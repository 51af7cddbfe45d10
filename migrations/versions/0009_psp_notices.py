"""What the live PSP reported that staff must look at (`psp_notices`): a Pix the PSP would
not confirm, one that belongs to no charge of ours, a value this release does not know.

Revision ID: 0009_psp_notices
Revises: 0008_refund_funding
Create Date: 2026-11-26 06:00:00

"""

import sqlalchemy as sa
from alembic import op

import app.models.base

revision = "0009_psp_notices"
down_revision = "0008_refund_funding"
branch_labels = None
depends_on = None


def upgrade():
    op.create_table(
        "psp_notices",
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column(
            "kind",
            sa.Enum(
                "UNCONFIRMED_PIX",
                "UNMATCHED_PIX",
                "UNKNOWN_VALUE",
                "UNREADABLE",
                name="pspnoticekind",
                native_enum=False,
                length=20,
            ),
            nullable=False,
        ),
        sa.Column("subject", sa.String(length=200), nullable=False),
        sa.Column("detail", sa.String(length=1000), nullable=False),
        sa.Column(
            "reported",
            app.models.base.JSONType,
            nullable=False,
        ),
        sa.Column("occurrences", sa.Integer(), nullable=False),
        sa.Column("first_seen_at", app.models.base.UTCDateTime(timezone=True), nullable=False),
        sa.Column("last_seen_at", app.models.base.UTCDateTime(timezone=True), nullable=False),
        sa.Column("resolved_at", app.models.base.UTCDateTime(timezone=True), nullable=True),
        sa.Column("resolved_by", sa.String(length=36), nullable=True),
        sa.ForeignKeyConstraint(["resolved_by"], ["users.id"]),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("kind", "subject", name="uq_psp_notices_kind_subject"),
    )
    op.create_index(
        "ix_psp_notices_open", "psp_notices", ["resolved_at", "last_seen_at"], unique=False
    )


def downgrade():
    op.drop_index("ix_psp_notices_open", table_name="psp_notices")
    op.drop_table("psp_notices")
