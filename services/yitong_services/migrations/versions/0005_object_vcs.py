"""Object read grants: a content hash is not a read key.

``object_datasets(hash, dataset_id)``: the objects each dataset's versions name (readable by
whoever sees the dataset); ``objects.uploader``: who sent an object's bytes first, and
``object_uploads(hash, uploader)``: who sent them again when the store had them already. Existing versions are granted lazily: the service fills ``object_datasets`` from
their manifests when it starts (``objaccess.backfill``), since manifests live in the store,
which a migration does not reach.

Revision ID: 0005
Revises: 0004
"""

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("objects", sa.Column("uploader", sa.String(255), nullable=True))
    op.create_table(
        "object_datasets",
        sa.Column("hash", sa.String(64), primary_key=True),
        sa.Column("dataset_id", sa.Integer, sa.ForeignKey("datasets.id", ondelete="CASCADE"), primary_key=True),
    )
    op.create_index("ix_object_datasets_dataset_id", "object_datasets", ["dataset_id"])
    op.create_table(
        "object_uploads",
        sa.Column("hash", sa.String(64), primary_key=True),
        sa.Column("uploader", sa.String(255), primary_key=True),
    )


def downgrade() -> None:
    op.drop_table("object_uploads")
    op.drop_index("ix_object_datasets_dataset_id", table_name="object_datasets")
    op.drop_table("object_datasets")
    with op.batch_alter_table("objects") as batch:
        batch.drop_column("uploader")
