"""Users (with the local user), per-user settings, and the AI call log.

Revision ID: 0001
Revises:
Create Date: 2026-12-02
"""

from collections.abc import Sequence
from datetime import UTC, datetime

import sqlalchemy as sa
from alembic import op

revision: str = "0001"
down_revision: str | None = None
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# Row ids: BIGINT on PostgreSQL; on SQLite INTEGER, whose key is the 64-bit rowid.
ID = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    users = op.create_table(
        "users",
        sa.Column("id", ID, nullable=False),
        sa.Column("name", sa.String(length=80), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_users")),
        sa.UniqueConstraint("name", name=op.f("uq_users_name")),
    )
    op.create_table(
        "user_settings",
        sa.Column("user_id", ID, nullable=False),
        sa.Column("key", sa.String(length=64), nullable=False),
        sa.Column("value", sa.Text(), nullable=False),
        sa.Column("updated_at", sa.DateTime(), nullable=False),
        sa.ForeignKeyConstraint(
            ["user_id"],
            ["users.id"],
            name=op.f("fk_user_settings_user_id_users"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("user_id", "key", name=op.f("pk_user_settings")),
    )
    op.create_table(
        "ai_calls",
        sa.Column("id", ID, nullable=False),
        sa.Column("user_id", ID, nullable=True),
        sa.Column("adventure_id", ID, nullable=True),
        sa.Column("kind", sa.String(length=16), nullable=False),
        sa.Column("provider", sa.String(length=255), nullable=False),
        sa.Column("model", sa.String(length=255), nullable=False),
        sa.Column("started_at", sa.DateTime(), nullable=False),
        sa.Column("duration_ms", sa.Float(), nullable=False),
        sa.Column("tokens_in", sa.Integer(), nullable=True),
        sa.Column("tokens_out", sa.Integer(), nullable=True),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("error", sa.Text(), nullable=True),
        sa.ForeignKeyConstraint(
            ["user_id"], ["users.id"], name=op.f("fk_ai_calls_user_id_users"), ondelete="SET NULL"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_ai_calls")),
    )
    op.create_index(op.f("ix_ai_calls_adventure_id"), "ai_calls", ["adventure_id"])
    op.create_index("ix_ai_calls_user_id_id", "ai_calls", ["user_id", "id"])
    # The local user: a fresh install plays without any login.
    now = datetime.now(UTC).replace(tzinfo=None)
    op.bulk_insert(users, [{"name": "local", "created_at": now}])


def downgrade() -> None:
    op.drop_index("ix_ai_calls_user_id_id", table_name="ai_calls")
    op.drop_index(op.f("ix_ai_calls_adventure_id"), table_name="ai_calls")
    op.drop_table("ai_calls")
    op.drop_table("user_settings")
    op.drop_table("users")
