"""Batch inference: the jobs that run a model version over a dataset version, and the lineage a
dataset version records of the platform job that made it.

Revision ID: 0010
Revises: 0009
"""

import sqlalchemy as sa
from alembic import op

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("dataset_versions", sa.Column("lineage", sa.JSON, nullable=False, server_default="{}"))
    op.create_table(
        "batch_jobs",
        sa.Column("job_id", sa.Integer, sa.ForeignKey("jobs.id", ondelete="CASCADE"), primary_key=True),
        sa.Column("model_id", sa.Integer, sa.ForeignKey("models.id", ondelete="CASCADE"), nullable=False, index=True),
        sa.Column(
            "version_id", sa.Integer, sa.ForeignKey("model_versions.id", ondelete="CASCADE"), nullable=False, index=True
        ),
        sa.Column("input", sa.JSON, nullable=False),
        sa.Column(
            "output_dataset_id",
            sa.Integer,
            sa.ForeignKey("datasets.id", ondelete="CASCADE"),
            nullable=False,
            index=True,
        ),
        sa.Column("plan", sa.JSON, nullable=False),
        sa.Column("output_version", sa.Integer, nullable=True),
    )


def downgrade() -> None:
    op.drop_table("batch_jobs")
    with op.batch_alter_table("dataset_versions") as batch:
        batch.drop_column("lineage")
