"""The story engine: adventures, branches, actions, story cards, Insights snapshots.

Revision ID: 0002
Revises: 0001
Create Date: 2026-12-02
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0002"
down_revision: str | None = "0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# Row ids: BIGINT on PostgreSQL; on SQLite INTEGER, whose key is the 64-bit rowid.
ID = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    op.create_table(
        "adventures",
        sa.Column("id", ID, nullable=False),
        sa.Column("user_id", ID, nullable=False),
        sa.Column("title", sa.String(length=200), nullable=False),
        sa.Column("scenario_id", sa.String(length=64), nullable=True),
        sa.Column("persona_name", sa.String(length=120), nullable=False),
        sa.Column("persona_pronouns", sa.String(length=40), nullable=False),
        sa.Column("persona_description", sa.Text(), nullable=False),
        sa.Column("ai_instructions", sa.Text(), nullable=False),
        sa.Column("plot_essentials", sa.Text(), nullable=False),
        sa.Column("authors_note", sa.Text(), nullable=False),
        sa.Column("story_summary", sa.Text(), nullable=False),
        sa.Column("auto_summarize", sa.Boolean(), nullable=False),
        sa.Column("memory_bank", sa.Boolean(), nullable=False),
        sa.Column("current_branch_id", ID, nullable=True),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("updated_at", sa.DateTime(), nullable=False),
        sa.ForeignKeyConstraint(
            ["user_id"], ["users.id"], name=op.f("fk_adventures_user_id_users"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_adventures")),
    )
    op.create_index(op.f("ix_adventures_user_id"), "adventures", ["user_id"])
    op.create_table(
        "branches",
        sa.Column("id", ID, nullable=False),
        sa.Column("adventure_id", ID, nullable=False),
        sa.Column("parent_id", ID, nullable=True),
        sa.Column("fork_depth", sa.Integer(), nullable=False),
        sa.Column("forked_from_action_id", ID, nullable=True),
        sa.Column("name", sa.String(length=120), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.ForeignKeyConstraint(
            ["adventure_id"],
            ["adventures.id"],
            name=op.f("fk_branches_adventure_id_adventures"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["parent_id"],
            ["branches.id"],
            name=op.f("fk_branches_parent_id_branches"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_branches")),
    )
    op.create_index(op.f("ix_branches_adventure_id"), "branches", ["adventure_id"])
    op.create_table(
        "actions",
        sa.Column("id", ID, nullable=False),
        sa.Column("adventure_id", ID, nullable=False),
        sa.Column("branch_id", ID, nullable=False),
        sa.Column("depth", sa.Integer(), nullable=False),
        sa.Column("type", sa.String(length=16), nullable=False),
        sa.Column("text", sa.Text(), nullable=False),
        sa.Column("state", sa.String(length=8), nullable=False),
        sa.Column("take", sa.Integer(), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("edited_at", sa.DateTime(), nullable=True),
        sa.ForeignKeyConstraint(
            ["adventure_id"],
            ["adventures.id"],
            name=op.f("fk_actions_adventure_id_adventures"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["branch_id"],
            ["branches.id"],
            name=op.f("fk_actions_branch_id_branches"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_actions")),
    )
    op.create_index(op.f("ix_actions_adventure_id"), "actions", ["adventure_id"])
    op.create_index("ix_actions_branch_id_state_depth", "actions", ["branch_id", "state", "depth"])
    op.create_index("ix_actions_branch_id_depth", "actions", ["branch_id", "depth"])
    op.create_index(
        "uq_actions_active_slot",
        "actions",
        ["branch_id", "depth"],
        unique=True,
        sqlite_where=sa.text("state = 'active'"),
        postgresql_where=sa.text("state = 'active'"),
    )
    op.create_table(
        "story_cards",
        sa.Column("id", ID, nullable=False),
        sa.Column("adventure_id", ID, nullable=False),
        sa.Column("name", sa.String(length=120), nullable=False),
        sa.Column("type", sa.String(length=16), nullable=False),
        sa.Column("keywords", sa.Text(), nullable=False),
        sa.Column("entry", sa.Text(), nullable=False),
        sa.Column("notes", sa.Text(), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("updated_at", sa.DateTime(), nullable=False),
        sa.ForeignKeyConstraint(
            ["adventure_id"],
            ["adventures.id"],
            name=op.f("fk_story_cards_adventure_id_adventures"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_story_cards")),
    )
    op.create_index(op.f("ix_story_cards_adventure_id"), "story_cards", ["adventure_id"])
    op.create_table(
        "insights",
        sa.Column("action_id", ID, nullable=False),
        sa.Column("data", sa.Text(), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.ForeignKeyConstraint(
            ["action_id"],
            ["actions.id"],
            name=op.f("fk_insights_action_id_actions"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("action_id", name=op.f("pk_insights")),
    )
    # The call log's adventure column gains its key now that adventures exist.
    with op.batch_alter_table("ai_calls") as batch:
        batch.create_foreign_key(
            op.f("fk_ai_calls_adventure_id_adventures"),
            "adventures",
            ["adventure_id"],
            ["id"],
            ondelete="SET NULL",
        )


def downgrade() -> None:
    with op.batch_alter_table("ai_calls") as batch:
        batch.drop_constraint(op.f("fk_ai_calls_adventure_id_adventures"), type_="foreignkey")
    op.drop_table("insights")
    op.drop_index(op.f("ix_story_cards_adventure_id"), table_name="story_cards")
    op.drop_table("story_cards")
    op.drop_index("uq_actions_active_slot", table_name="actions")
    op.drop_index("ix_actions_branch_id_depth", table_name="actions")
    op.drop_index("ix_actions_branch_id_state_depth", table_name="actions")
    op.drop_index(op.f("ix_actions_adventure_id"), table_name="actions")
    op.drop_table("actions")
    op.drop_index(op.f("ix_branches_adventure_id"), table_name="branches")
    op.drop_table("branches")
    op.drop_index(op.f("ix_adventures_user_id"), table_name="adventures")
    op.drop_table("adventures")
