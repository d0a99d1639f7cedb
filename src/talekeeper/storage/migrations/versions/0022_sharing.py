"""Shared adventures (docs/sharing.md): ``adventure_members``, the accounts besides the
host that belong to an adventure, each with its role and persona; ``adventure_invites``,
the codes (kept as their SHA-256) that let them join. New tables only: no row is moved.

Revision ID: 0022
Revises: 0021
Create Date: 2026-12-07
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0022"
down_revision: str | None = "0021"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# Row ids: BIGINT on PostgreSQL; on SQLite INTEGER, whose key is the 64-bit rowid.
ID = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def _of_adventure(table: str) -> sa.ForeignKeyConstraint:
    return sa.ForeignKeyConstraint(
        ["adventure_id"],
        ["adventures.id"],
        name=op.f(f"fk_{table}_adventure_id_adventures"),
        ondelete="CASCADE",
    )


def upgrade() -> None:
    op.create_table(
        "adventure_members",
        sa.Column("id", ID, nullable=False),
        sa.Column("adventure_id", ID, nullable=False),
        sa.Column("user_id", ID, nullable=False),
        sa.Column("role", sa.String(length=8), nullable=False),
        sa.Column("persona_name", sa.String(length=120), nullable=False),
        sa.Column("persona_pronouns", sa.String(length=40), nullable=False),
        sa.Column("persona_description", sa.Text(), nullable=False),
        sa.Column("joined_at", sa.DateTime(), nullable=False),
        _of_adventure("adventure_members"),
        sa.ForeignKeyConstraint(
            ["user_id"],
            ["users.id"],
            name=op.f("fk_adventure_members_user_id_users"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_adventure_members")),
        sa.UniqueConstraint(
            "adventure_id", "user_id", name=op.f("uq_adventure_members_adventure_id_user_id")
        ),
    )
    for column in ("adventure_id", "user_id"):
        op.create_index(
            op.f(f"ix_adventure_members_{column}"), "adventure_members", [column], unique=False
        )
    op.create_table(
        "adventure_invites",
        sa.Column("id", ID, nullable=False),
        sa.Column("adventure_id", ID, nullable=False),
        sa.Column("code_hash", sa.String(length=64), nullable=False),
        sa.Column("role", sa.String(length=8), nullable=False),
        sa.Column("uses_left", sa.Integer(), nullable=False),
        sa.Column("expires_at", sa.DateTime(), nullable=False),
        sa.Column("revoked_at", sa.DateTime(), nullable=True),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        _of_adventure("adventure_invites"),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_adventure_invites")),
        sa.UniqueConstraint("code_hash", name=op.f("uq_adventure_invites_code_hash")),
    )
    op.create_index(
        op.f("ix_adventure_invites_adventure_id"),
        "adventure_invites",
        ["adventure_id"],
        unique=False,
    )


def downgrade() -> None:
    op.drop_index(op.f("ix_adventure_invites_adventure_id"), table_name="adventure_invites")
    op.drop_table("adventure_invites")
    for column in ("user_id", "adventure_id"):
        op.drop_index(op.f(f"ix_adventure_members_{column}"), table_name="adventure_members")
    op.drop_table("adventure_members")
