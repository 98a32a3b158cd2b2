"""Where a server's accelerators are (node and device indices), a VC's idle timeout.

Revision ID: 0012
Revises: 0011
"""

import sqlalchemy as sa
from alembic import op

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("allocations") as batch:
        batch.add_column(sa.Column("devices", sa.JSON, nullable=True))
    with op.batch_alter_table("vcs") as batch:
        batch.add_column(sa.Column("idle_timeout", sa.Integer, nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("vcs") as batch:
        batch.drop_column("idle_timeout")
    with op.batch_alter_table("allocations") as batch:
        batch.drop_column("devices")
