"""The memory system: memories, their uses, Story Summary versions, background work, the Scene.

The Story Summary moves from a column of ``adventures`` to versions anchored to
nodes; an existing summary becomes a version written by the player, anchored
before the first action of the adventure's first branch (so every branch sees it).

Revision ID: 0003
Revises: 0002
Create Date: 2026-12-02
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from talekeeper.storage.sqlite import require_native_alter

revision: str = "0003"
down_revision: str | None = "0002"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# Row ids: BIGINT on PostgreSQL; on SQLite INTEGER, whose key is the 64-bit rowid.
ID = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    op.create_table(
        "memories",
        sa.Column("id", ID, nullable=False),
        sa.Column("adventure_id", ID, nullable=False),
        sa.Column("branch_id", ID, nullable=False),
        sa.Column("depth", sa.Integer(), nullable=False),
        sa.Column("action_id", ID, nullable=True),
        sa.Column("source_start", sa.Integer(), nullable=True),
        sa.Column("source_end", sa.Integer(), nullable=True),
        sa.Column("text", sa.Text(), nullable=False),
        sa.Column("authority", sa.String(length=16), nullable=False),
        sa.Column("origin", sa.String(length=8), nullable=False),
        sa.Column("writer", sa.String(length=255), nullable=False),
        sa.Column("status", sa.String(length=12), nullable=False),
        sa.Column("pinned", sa.Boolean(), nullable=False),
        sa.Column("stale", sa.Boolean(), nullable=False),
        sa.Column("use_count", sa.Integer(), nullable=False),
        sa.Column("last_used_at", sa.DateTime(), nullable=True),
        sa.Column("vector", sa.LargeBinary(), nullable=True),
        sa.Column("vector_model", sa.String(length=255), nullable=True),
        sa.Column("terms", sa.Text(), nullable=False),
        sa.Column("revision", sa.Integer(), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("updated_at", sa.DateTime(), nullable=False),
        sa.ForeignKeyConstraint(
            ["action_id"],
            ["actions.id"],
            name=op.f("fk_memories_action_id_actions"),
            ondelete="SET NULL",
        ),
        sa.ForeignKeyConstraint(
            ["adventure_id"],
            ["adventures.id"],
            name=op.f("fk_memories_adventure_id_adventures"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["branch_id"],
            ["branches.id"],
            name=op.f("fk_memories_branch_id_branches"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_memories")),
    )
    op.create_index(
        "ix_memories_adventure_id_revision", "memories", ["adventure_id", "revision"], unique=False
    )
    op.create_index("ix_memories_branch_id_depth", "memories", ["branch_id", "depth"], unique=False)
    op.create_index(op.f("ix_memories_adventure_id"), "memories", ["adventure_id"], unique=False)
    op.create_table(
        "memory_uses",
        sa.Column("memory_id", ID, nullable=False),
        sa.Column("action_id", ID, nullable=False),
        sa.ForeignKeyConstraint(
            ["action_id"],
            ["actions.id"],
            name=op.f("fk_memory_uses_action_id_actions"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["memory_id"],
            ["memories.id"],
            name=op.f("fk_memory_uses_memory_id_memories"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("memory_id", "action_id", name=op.f("pk_memory_uses")),
    )
    op.create_table(
        "summary_versions",
        sa.Column("id", ID, nullable=False),
        sa.Column("adventure_id", ID, nullable=False),
        sa.Column("branch_id", ID, nullable=False),
        sa.Column("depth", sa.Integer(), nullable=False),
        sa.Column("action_id", ID, nullable=True),
        sa.Column("covers_to", sa.Integer(), nullable=False),
        sa.Column("text", sa.Text(), nullable=False),
        sa.Column("trigger", sa.String(length=12), nullable=False),
        sa.Column("writer", sa.String(length=255), nullable=False),
        sa.Column("base_id", ID, nullable=True),
        sa.Column("refreshes_id", ID, nullable=True),
        sa.Column("stale", sa.Boolean(), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.ForeignKeyConstraint(
            ["action_id"],
            ["actions.id"],
            name=op.f("fk_summary_versions_action_id_actions"),
            ondelete="SET NULL",
        ),
        sa.ForeignKeyConstraint(
            ["adventure_id"],
            ["adventures.id"],
            name=op.f("fk_summary_versions_adventure_id_adventures"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["branch_id"],
            ["branches.id"],
            name=op.f("fk_summary_versions_branch_id_branches"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_summary_versions")),
    )
    op.create_index(
        op.f("ix_summary_versions_adventure_id"), "summary_versions", ["adventure_id"], unique=False
    )
    op.create_table(
        "derived_jobs",
        sa.Column("adventure_id", ID, nullable=False),
        sa.Column("requested_at", sa.DateTime(), nullable=False),
        sa.Column("claimed_at", sa.DateTime(), nullable=True),
        sa.ForeignKeyConstraint(
            ["adventure_id"],
            ["adventures.id"],
            name=op.f("fk_derived_jobs_adventure_id_adventures"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("adventure_id", name=op.f("pk_derived_jobs")),
    )
    op.create_table(
        "derived_states",
        sa.Column("adventure_id", ID, nullable=False),
        sa.Column("kind", sa.String(length=16), nullable=False),
        sa.Column("state", sa.String(length=8), nullable=False),
        sa.Column("last_run_at", sa.DateTime(), nullable=True),
        sa.Column("last_success_at", sa.DateTime(), nullable=True),
        sa.Column("last_failure_at", sa.DateTime(), nullable=True),
        sa.Column("last_error", sa.Text(), nullable=True),
        sa.Column("did_work", sa.Boolean(), nullable=False),
        sa.Column("failures", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(
            ["adventure_id"],
            ["adventures.id"],
            name=op.f("fk_derived_states_adventure_id_adventures"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("adventure_id", "kind", name=op.f("pk_derived_states")),
    )
    # Native ALTER TABLE only (SQLite >= 3.35): a batch "move and copy" would drop and
    # recreate ``adventures``, and with foreign keys on that drop cascades to every branch,
    # action and memory of every adventure.
    require_native_alter(op.get_bind(), "upgrade")
    op.add_column(
        "adventures",
        sa.Column("scene_location", sa.String(length=200), nullable=False, server_default=""),
    )
    op.add_column(
        "adventures", sa.Column("scene_present", sa.Text(), nullable=False, server_default="[]")
    )
    op.add_column(
        "adventures", sa.Column("scene_summary", sa.Text(), nullable=False, server_default="")
    )
    op.add_column(
        "adventures",
        sa.Column("scene_by_player", sa.Boolean(), nullable=False, server_default=sa.false()),
    )
    # An existing Story Summary becomes the player's version, before the first action.
    op.execute(
        """
        INSERT INTO summary_versions
            (adventure_id, branch_id, depth, action_id, covers_to, text, trigger, writer, stale,
             created_at)
        SELECT a.id, (SELECT MIN(b.id) FROM branches b WHERE b.adventure_id = a.id), -1, NULL, -1,
               a.story_summary, 'user', '', false, a.updated_at
        FROM adventures a
        WHERE a.story_summary <> ''
          AND EXISTS (SELECT 1 FROM branches b WHERE b.adventure_id = a.id)
        """
    )
    op.drop_column("adventures", "story_summary")


def downgrade() -> None:
    require_native_alter(op.get_bind(), "downgrade")
    op.add_column(
        "adventures", sa.Column("story_summary", sa.Text(), nullable=False, server_default="")
    )
    op.execute(
        """
        UPDATE adventures SET story_summary = COALESCE((
            SELECT s.text FROM summary_versions s WHERE s.adventure_id = adventures.id
            ORDER BY s.id DESC LIMIT 1), '')
        """
    )
    for column in ("scene_by_player", "scene_summary", "scene_present", "scene_location"):
        op.drop_column("adventures", column)
    op.drop_table("derived_states")
    op.drop_table("derived_jobs")
    op.drop_index(op.f("ix_summary_versions_adventure_id"), table_name="summary_versions")
    op.drop_table("summary_versions")
    op.drop_table("memory_uses")
    op.drop_index(op.f("ix_memories_adventure_id"), table_name="memories")
    op.drop_index("ix_memories_branch_id_depth", table_name="memories")
    op.drop_index("ix_memories_adventure_id_revision", table_name="memories")
    op.drop_table("memories")
