"""Alert rules, routes and the firing/resolved history.

Revision ID: 0011
Revises: 0009
"""

import sqlalchemy as sa
from alembic import op

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None

TZ = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "alert_rules",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("name", sa.String(32), nullable=False, unique=True),
        sa.Column("kind", sa.String(32), nullable=False),
        sa.Column("vc", sa.String(32), nullable=True, index=True),
        sa.Column("threshold", sa.Float, nullable=True),
        sa.Column("expr", sa.Text, nullable=False),
        sa.Column("severity", sa.String(16), nullable=False),
        sa.Column("for_seconds", sa.Integer, nullable=False),
        sa.Column("description", sa.Text, nullable=False),
        sa.Column("created", TZ, nullable=False),
        sa.Column("updated", TZ, nullable=False),
    )
    op.create_table(
        "alert_routes",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("vc", sa.String(32), nullable=True, index=True),
        sa.Column("emails", sa.JSON, nullable=False),
        sa.Column("severities", sa.JSON, nullable=False),
        sa.Column("created", TZ, nullable=False),
    )
    op.create_table(
        "alert_events",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("fingerprint", sa.String(64), nullable=False, index=True),
        sa.Column("alertname", sa.String(255), nullable=False),
        sa.Column("status", sa.String(16), nullable=False, index=True),
        sa.Column("vc", sa.String(32), nullable=True, index=True),
        sa.Column("severity", sa.String(16), nullable=False),
        sa.Column("labels", sa.JSON, nullable=False),
        sa.Column("annotations", sa.JSON, nullable=False),
        sa.Column("starts_at", TZ, nullable=False),
        sa.Column("ends_at", TZ, nullable=True),
        sa.Column("received", TZ, nullable=False, index=True),
        sa.UniqueConstraint("fingerprint", "starts_at", "status", name="uq_alert_events_once"),
    )


def downgrade() -> None:
    op.drop_table("alert_events")
    op.drop_table("alert_routes")
    op.drop_table("alert_rules")
