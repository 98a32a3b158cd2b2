"""Per-endpoint keys that admins issue for outside callers (hashed).

Revision ID: 0014
Revises: 0011
"""

import sqlalchemy as sa
from alembic import op

revision = "0014"
down_revision = "0012"
branch_labels = None
depends_on = None

TZ = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "endpoint_keys",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column(
            "endpoint_id", sa.Integer, sa.ForeignKey("endpoints.id", ondelete="CASCADE"), nullable=False, index=True
        ),
        sa.Column("digest", sa.String(64), nullable=False, unique=True),
        sa.Column("prefix", sa.String(16), nullable=False),
        sa.Column("note", sa.String(255), nullable=False),
        sa.Column("created_by", sa.String(255), nullable=False),
        sa.Column("created", TZ, nullable=False),
        sa.Column("revoked", TZ, nullable=True),
    )


def downgrade() -> None:
    op.drop_table("endpoint_keys")
