"""Jobs and runs (ledger records).

Revision ID: 0003
Revises: 0002
"""

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None

TZ = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "jobs",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("name", sa.String(32), nullable=False),
        sa.Column("vc", sa.String(32), sa.ForeignKey("vcs.name"), nullable=False, index=True),
        sa.Column("user", sa.String(255), nullable=False, index=True),
        sa.Column("spec", sa.JSON, nullable=False),
        sa.Column("code", sa.JSON, nullable=False),
        sa.Column("inputs", sa.JSON, nullable=False),
        sa.Column("state", sa.String(16), nullable=False, index=True),
        sa.Column("reason", sa.Text, nullable=False),
        sa.Column("priority", sa.Integer, nullable=False),
        sa.Column("created", TZ, nullable=False),
        sa.Column("admitted", TZ, nullable=True),
        sa.Column("started", TZ, nullable=True),
        sa.Column("finished", TZ, nullable=True),
        sa.Column("exit_code", sa.Integer, nullable=True),
        sa.Column("attempts", sa.Integer, nullable=False),
        sa.Column("backend", sa.String(32), nullable=False),
        sa.Column("backend_ref", sa.Text, nullable=True),
        sa.Column("hosts", sa.JSON, nullable=False),
        sa.Column("ports", sa.JSON, nullable=False),
        sa.Column("devices", sa.JSON, nullable=False),
        sa.Column("token_hash", sa.String(64), nullable=False),
        sa.Column("cancel_requested", sa.Boolean, nullable=False),
    )
    op.create_table(
        "runs",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("job_id", sa.Integer, sa.ForeignKey("jobs.id", ondelete="CASCADE"), nullable=False, index=True),
        sa.Column("attempt", sa.Integer, nullable=False),
        sa.Column("record", sa.JSON, nullable=False),
        sa.Column("metrics", sa.JSON, nullable=False),
        sa.Column("created", TZ, nullable=False),
    )


def downgrade() -> None:
    op.drop_table("runs")
    op.drop_table("jobs")
