"""VCs, profiles, allocations, seed log.

Revision ID: 0001
Revises:
"""

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "vcs",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("name", sa.String(32), nullable=False, unique=True),
        sa.Column("description", sa.Text, nullable=False),
        sa.Column("quota", sa.JSON, nullable=False),
        sa.Column("groups", sa.JSON, nullable=False),
        sa.Column("profiles", sa.JSON, nullable=False),
        sa.Column("user_caps", sa.JSON, nullable=False),
        sa.Column("created", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_table(
        "profiles",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("name", sa.String(32), nullable=False, unique=True),
        sa.Column("display_name", sa.Text, nullable=False),
        sa.Column("description", sa.Text, nullable=False),
        sa.Column("image", sa.Text, nullable=False),
        sa.Column("kernel", sa.String(255), nullable=False),
        sa.Column("cpu", sa.Float, nullable=False),
        sa.Column("memory", sa.BigInteger, nullable=False),
        sa.Column("accelerator", sa.JSON, nullable=True),
        sa.Column("arch", sa.String(16), nullable=True),
    )
    op.create_table(
        "allocations",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("user", sa.String(255), nullable=False, index=True),
        sa.Column("vc", sa.String(32), sa.ForeignKey("vcs.name"), nullable=False, index=True),
        sa.Column("profile", sa.String(32), nullable=False),
        sa.Column("kind", sa.String(16), nullable=False),
        sa.Column("ref", sa.String(255), nullable=False),
        sa.Column("resources", sa.JSON, nullable=False),
        sa.Column("created", sa.DateTime(timezone=True), nullable=False),
        sa.UniqueConstraint("kind", "ref", name="uq_allocations_kind_ref"),
    )
    op.create_table(
        "seed_log",
        sa.Column("kind", sa.String(16), primary_key=True),
        sa.Column("name", sa.String(32), primary_key=True),
    )


def downgrade() -> None:
    for table in ("seed_log", "allocations", "profiles", "vcs"):
        op.drop_table(table)
