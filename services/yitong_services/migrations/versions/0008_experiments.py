"""Experiments and trials (hyperparameter search).

Revision ID: 0008
Revises: 0007
"""

import sqlalchemy as sa
from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None

TZ = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "experiments",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("name", sa.String(32), nullable=False),
        sa.Column("vc", sa.String(32), sa.ForeignKey("vcs.name"), nullable=False, index=True),
        sa.Column("user", sa.String(255), nullable=False, index=True),
        sa.Column("groups", sa.JSON, nullable=False),
        sa.Column("config", sa.JSON, nullable=False),
        sa.Column("state", sa.String(16), nullable=False, index=True),
        sa.Column("reason", sa.Text, nullable=False),
        sa.Column("created", TZ, nullable=False),
        sa.Column("used_seconds", sa.Float, nullable=False),
        sa.Column("resumed", TZ, nullable=False),
        sa.Column("finished", TZ, nullable=True),
    )
    op.create_table(
        "trials",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column(
            "experiment_id",
            sa.Integer,
            sa.ForeignKey("experiments.id", ondelete="CASCADE"),
            nullable=False,
            index=True,
        ),
        sa.Column("number", sa.Integer, nullable=False),
        sa.Column("job_id", sa.Integer, sa.ForeignKey("jobs.id"), nullable=True, index=True),
        sa.Column("params", sa.JSON, nullable=False),
        sa.Column("internal", sa.JSON, nullable=False),
        sa.Column("state", sa.String(16), nullable=False, index=True),
        sa.Column("reason", sa.Text, nullable=False),
        sa.Column("intermediate", sa.JSON, nullable=False),
        sa.Column("value", sa.Float, nullable=True),
        sa.Column("offset", sa.Integer, nullable=False),
        sa.Column("created", TZ, nullable=False),
        sa.Column("finished", TZ, nullable=True),
        sa.UniqueConstraint("experiment_id", "number"),
    )


def downgrade() -> None:
    op.drop_table("trials")
    op.drop_table("experiments")
