"""Jobs keep what admission needs (resources, accelerator), computed once at submit.

Revision ID: 0006
Revises: 0005
"""

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # jobs submitted before this are filled at their next admission pass (queue.admission_request)
    op.add_column("jobs", sa.Column("request", sa.JSON, nullable=False, server_default="{}"))


def downgrade() -> None:
    with op.batch_alter_table("jobs") as batch:
        batch.drop_column("request")
