"""The model registry: models, versions (backed by dataset versions), aliases and endpoints.

Revision ID: 0009
Revises: 0008
"""

import sqlalchemy as sa
from alembic import op

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None

TZ = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "models",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("vc", sa.String(32), sa.ForeignKey("vcs.name"), nullable=False, index=True),
        sa.Column("name", sa.String(32), nullable=False),
        sa.Column("description", sa.Text, nullable=False),
        sa.Column("owner", sa.String(255), nullable=False),
        sa.Column("dataset_id", sa.Integer, sa.ForeignKey("datasets.id"), nullable=False, index=True),
        sa.Column("created", TZ, nullable=False),
        sa.UniqueConstraint("vc", "name", name="uq_models_vc_name"),
    )
    op.create_table(
        "model_versions",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("model_id", sa.Integer, sa.ForeignKey("models.id", ondelete="CASCADE"), nullable=False, index=True),
        sa.Column("number", sa.Integer, nullable=False),
        sa.Column("dataset_version_id", sa.Integer, sa.ForeignKey("dataset_versions.id"), nullable=False, unique=True),
        sa.Column("author", sa.String(255), nullable=False),
        sa.Column("framework", sa.String(64), nullable=False),
        sa.Column("format", sa.String(64), nullable=False),
        sa.Column("signature", sa.JSON, nullable=False),
        sa.Column("metrics", sa.JSON, nullable=False),
        sa.Column("tags", sa.JSON, nullable=False),
        sa.Column("lineage", sa.JSON, nullable=False),
        sa.Column("created", TZ, nullable=False),
        sa.UniqueConstraint("model_id", "number", name="uq_model_versions_number"),
    )
    op.create_table(
        "model_aliases",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("model_id", sa.Integer, sa.ForeignKey("models.id", ondelete="CASCADE"), nullable=False, index=True),
        sa.Column("name", sa.String(64), nullable=False),
        sa.Column(
            "version_id", sa.Integer, sa.ForeignKey("model_versions.id", ondelete="CASCADE"), nullable=False, index=True
        ),
        sa.UniqueConstraint("model_id", "name", name="uq_model_aliases_name"),
    )
    op.create_table(
        "endpoints",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("name", sa.String(32), nullable=False, unique=True),
        sa.Column("vc", sa.String(32), sa.ForeignKey("vcs.name"), nullable=False, index=True),
        sa.Column("owner", sa.String(255), nullable=False),
        sa.Column("model_id", sa.Integer, sa.ForeignKey("models.id"), nullable=False, index=True),
        sa.Column("version_id", sa.Integer, sa.ForeignKey("model_versions.id"), nullable=False, index=True),
        sa.Column("allocation_id", sa.Integer, nullable=True),
        sa.Column("port", sa.Integer, nullable=False),
        sa.Column("pid", sa.Integer, nullable=False),
        sa.Column("state", sa.String(16), nullable=False),
        sa.Column("reason", sa.Text, nullable=False),
        sa.Column("created", TZ, nullable=False),
    )


def downgrade() -> None:
    op.drop_table("endpoints")
    op.drop_table("model_aliases")
    op.drop_table("model_versions")
    op.drop_table("models")
