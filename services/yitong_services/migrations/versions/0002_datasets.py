"""Datasets, versions, tags, references, packs and the object index.

Revision ID: 0002
Revises: 0001
"""

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None

TZ = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "datasets",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("vc", sa.String(32), sa.ForeignKey("vcs.name"), nullable=False, index=True),
        sa.Column("name", sa.String(32), nullable=False),
        sa.Column("description", sa.Text, nullable=False),
        sa.Column("visibility", sa.String(16), nullable=False),
        sa.Column("owner", sa.String(255), nullable=False),
        sa.Column("next_number", sa.Integer, nullable=False),
        sa.Column("created", TZ, nullable=False),
        sa.UniqueConstraint("vc", "name", name="uq_datasets_vc_name"),
    )
    op.create_table(
        "dataset_versions",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column(
            "dataset_id", sa.Integer, sa.ForeignKey("datasets.id", ondelete="CASCADE"), nullable=False, index=True
        ),
        sa.Column("number", sa.Integer, nullable=False),
        sa.Column("manifest", sa.String(64), nullable=False, index=True),
        sa.Column("parent", sa.Integer, nullable=True),
        sa.Column("author", sa.String(255), nullable=False),
        sa.Column("message", sa.Text, nullable=False),
        sa.Column("files", sa.Integer, nullable=False),
        sa.Column("bytes", sa.BigInteger, nullable=False),
        sa.Column("created", TZ, nullable=False),
        sa.UniqueConstraint("dataset_id", "number", name="uq_dataset_versions_number"),
    )
    op.create_table(
        "dataset_tags",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column(
            "dataset_id", sa.Integer, sa.ForeignKey("datasets.id", ondelete="CASCADE"), nullable=False, index=True
        ),
        sa.Column("name", sa.String(64), nullable=False),
        sa.Column(
            "version_id",
            sa.Integer,
            sa.ForeignKey("dataset_versions.id", ondelete="CASCADE"),
            nullable=False,
            index=True,
        ),
        sa.UniqueConstraint("dataset_id", "name", name="uq_dataset_tags_name"),
    )
    op.create_table(
        "dataset_refs",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column(
            "version_id",
            sa.Integer,
            sa.ForeignKey("dataset_versions.id", ondelete="CASCADE"),
            nullable=False,
            index=True,
        ),
        sa.Column("kind", sa.String(16), nullable=False),
        sa.Column("ref", sa.String(255), nullable=False),
        sa.Column("created", TZ, nullable=False),
        sa.UniqueConstraint("version_id", "kind", "ref", name="uq_dataset_refs"),
    )
    op.create_table(
        "packs",
        sa.Column("id", sa.String(64), primary_key=True),
        sa.Column("size", sa.BigInteger, nullable=False),
        sa.Column("created", TZ, nullable=False),
    )
    op.create_table(
        "objects",
        sa.Column("hash", sa.String(64), primary_key=True),
        sa.Column("size", sa.BigInteger, nullable=False),
        sa.Column("pack", sa.String(64), sa.ForeignKey("packs.id"), nullable=True, index=True),
        sa.Column("offset", sa.BigInteger, nullable=True),
        sa.Column("created", TZ, nullable=False),
    )


def downgrade() -> None:
    for table in ("objects", "packs", "dataset_refs", "dataset_tags", "dataset_versions", "datasets"):
        op.drop_table(table)
