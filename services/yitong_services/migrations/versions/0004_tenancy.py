"""Tenancy: the audit log, idempotency keys, allocation ids that are never reused.

Revision ID: 0004
Revises: 0003
"""

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None

TZ = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "audit_log",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("at", TZ, nullable=False, index=True),
        sa.Column("actor", sa.String(255), nullable=False, index=True),
        sa.Column("actor_kind", sa.String(16), nullable=False),
        sa.Column("action", sa.String(64), nullable=False, index=True),
        sa.Column("target", sa.String(512), nullable=False),
        sa.Column("on_behalf_of", sa.String(255), nullable=True),
        sa.Column("source", sa.String(255), nullable=False),
        sa.Column("detail", sa.JSON, nullable=False),
        sqlite_autoincrement=True,
    )
    op.create_table(
        "idempotency_keys",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("user", sa.String(255), nullable=False),
        sa.Column("key", sa.String(255), nullable=False),
        sa.Column("operation", sa.String(255), nullable=False),
        sa.Column("request_hash", sa.String(64), nullable=False),
        sa.Column("status", sa.Integer, nullable=False),
        sa.Column("response", sa.JSON, nullable=False),
        sa.Column("created", TZ, nullable=False, index=True),
        sa.UniqueConstraint("user", "key", name="uq_idempotency_user_key"),
    )
    # SQLite hands out the id of a deleted last row again unless the table is AUTOINCREMENT:
    # a released allocation's id must never name somebody else's later allocation. (No table
    # references allocations, so recreating it is safe; PostgreSQL sequences never go back.)
    if op.get_bind().dialect.name == "sqlite":
        with op.batch_alter_table("allocations", recreate="always", table_kwargs={"sqlite_autoincrement": True}):
            pass


def downgrade() -> None:
    op.drop_table("idempotency_keys")
    op.drop_table("audit_log")
