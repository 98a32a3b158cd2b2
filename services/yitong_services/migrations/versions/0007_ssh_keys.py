"""People's SSH public keys (the SSH gateway's logins).

Revision ID: 0007
Revises: 0006
"""

import sqlalchemy as sa
from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "ssh_keys",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("user", sa.String(255), nullable=False),
        sa.Column("algorithm", sa.String(64), nullable=False),
        sa.Column("bits", sa.Integer, nullable=False),
        sa.Column("fingerprint", sa.String(64), nullable=False),
        sa.Column("public_key", sa.Text, nullable=False),
        sa.Column("comment", sa.String(255), nullable=False, server_default=""),
        sa.Column("created", sa.DateTime(timezone=True), nullable=False),
        sa.UniqueConstraint("user", "fingerprint", name="uq_ssh_keys_user_fingerprint"),
    )
    op.create_index("ix_ssh_keys_user", "ssh_keys", ["user"])


def downgrade() -> None:
    op.drop_index("ix_ssh_keys_user", table_name="ssh_keys")
    op.drop_table("ssh_keys")
