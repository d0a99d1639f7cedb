"""The sign-in throttle's counts move into the database (``sign_in_counts``), so that every
process serving it counts failed sign-ins together: one row per key (an account name from
one address, an account name from anywhere, one address at any name). Nothing existing
changes; the counts a process kept in memory before are simply forgotten.

Revision ID: 0012
Revises: 0011
Create Date: 2026-12-08
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0012"
down_revision: str | None = "0011"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "sign_in_counts",
        sa.Column("kind", sa.String(length=8), nullable=False),
        sa.Column("account", sa.String(length=64), nullable=False),
        sa.Column("address", sa.String(length=64), nullable=False),
        sa.Column("failures", sa.Integer(), nullable=False),
        sa.Column("locks", sa.Integer(), nullable=False),
        sa.Column("locked_until", sa.DateTime(), nullable=True),
        sa.Column("last_failure_at", sa.DateTime(), nullable=True),
        sa.Column("quiet_at", sa.DateTime(), nullable=False),
        sa.Column("known_until", sa.DateTime(), nullable=True),
        sa.PrimaryKeyConstraint("kind", "account", "address", name=op.f("pk_sign_in_counts")),
    )
    op.create_index(op.f("ix_sign_in_counts_quiet_at"), "sign_in_counts", ["quiet_at"])


def downgrade() -> None:
    op.drop_index(op.f("ix_sign_in_counts_quiet_at"), table_name="sign_in_counts")
    op.drop_table("sign_in_counts")
