"""Replicas per version: the number of replicas an endpoint runs of every version with a share.

Revision ID: 0016
Revises: 0015
"""

import sqlalchemy as sa
from alembic import op

revision = "0016"
down_revision = "0015"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("endpoints") as t:
        t.add_column(sa.Column("scale", sa.Integer, nullable=False, server_default="1"))


def downgrade() -> None:
    with op.batch_alter_table("endpoints") as t:
        t.drop_column("scale")
