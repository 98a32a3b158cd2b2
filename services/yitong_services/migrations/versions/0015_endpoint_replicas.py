"""Endpoints as workloads: the replicas an endpoint runs (each a job of its VC's queue) and their
share of its traffic; on Kubernetes, the InferenceService that serves it (``engine``).

Revision ID: 0015
Revises: 0011
"""

import sqlalchemy as sa
from alembic import op

revision = "0015"
down_revision = "0014"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("endpoints") as t:
        t.add_column(sa.Column("replicas", sa.JSON, nullable=False, server_default="[]"))
        t.add_column(sa.Column("engine", sa.JSON, nullable=False, server_default="{}"))


def downgrade() -> None:
    with op.batch_alter_table("endpoints") as t:
        t.drop_column("engine")
        t.drop_column("replicas")
