"""Storage quotas: a VC's storage_quota, the store's objects charged to each VC, and what the
storage walk measured of homes and job folders.

Revision ID: 0017
Revises: 0016
"""

import sqlalchemy as sa
from alembic import op

TZ = sa.DateTime(timezone=True)

revision = "0017"
down_revision = "0016"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("vcs") as t:
        t.add_column(sa.Column("storage_quota", sa.BigInteger, nullable=True))
    op.create_table(
        "vc_objects",
        sa.Column("vc", sa.String(32), primary_key=True),
        sa.Column("hash", sa.String(64), primary_key=True),
        sa.Column("size", sa.BigInteger, nullable=False),
        sa.Column("pending", sa.Boolean, nullable=False),
        sa.Column("created", TZ, nullable=False),
    )
    op.create_table(
        "storage_measures",
        sa.Column("kind", sa.String(16), primary_key=True),
        sa.Column("name", sa.String(255), primary_key=True),
        sa.Column("vc", sa.String(32), nullable=True),
        sa.Column("bytes", sa.BigInteger, nullable=False),
        sa.Column("files", sa.Integer, nullable=False),
        sa.Column("measured", TZ, nullable=False),
    )
    op.create_index("ix_storage_measures_vc", "storage_measures", ["vc"])


def downgrade() -> None:
    op.drop_index("ix_storage_measures_vc", "storage_measures")
    op.drop_table("storage_measures")
    op.drop_table("vc_objects")
    with op.batch_alter_table("vcs") as t:
        t.drop_column("storage_quota")
