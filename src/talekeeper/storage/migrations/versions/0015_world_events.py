"""The world as the story states it (docs/world.md): ``world_entities``, the named things
of an adventure (people, places, items, factions, quests), and ``world_events``, the
changes each action says happened to them, with the sentence each rests on and who said
it. Nothing is derived here: an existing story's world starts empty.

Revision ID: 0015
Revises: 0014
Create Date: 2026-12-06
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0015"
down_revision: str | None = "0014"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# Row ids: BIGINT on PostgreSQL; on SQLite INTEGER, whose key is the 64-bit rowid.
ID = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    op.create_table(
        "world_entities",
        sa.Column("id", ID, nullable=False),
        sa.Column("adventure_id", ID, nullable=False),
        sa.Column("kind", sa.String(length=8), nullable=False),
        sa.Column("name", sa.String(length=120), nullable=False),
        sa.Column("key", sa.String(length=120), nullable=False),
        sa.Column("aliases", sa.Text(), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.ForeignKeyConstraint(
            ["adventure_id"],
            ["adventures.id"],
            name=op.f("fk_world_entities_adventure_id_adventures"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_world_entities")),
        sa.UniqueConstraint(
            "adventure_id", "kind", "key", name=op.f("uq_world_entities_adventure_id_kind_key")
        ),
    )
    op.create_index(
        op.f("ix_world_entities_adventure_id"), "world_entities", ["adventure_id"], unique=False
    )
    entity = "world_entities.id"
    op.create_table(
        "world_events",
        sa.Column("id", ID, nullable=False),
        sa.Column("adventure_id", ID, nullable=False),
        sa.Column("action_id", ID, nullable=False),
        sa.Column("branch_id", ID, nullable=False),
        sa.Column("depth", sa.Integer(), nullable=False),
        sa.Column("kind", sa.String(length=12), nullable=False),
        sa.Column("subject_id", ID, nullable=True),
        sa.Column("object_id", ID, nullable=True),
        sa.Column("target_id", ID, nullable=True),
        sa.Column("value", sa.String(length=300), nullable=True),
        sa.Column("origin", sa.String(length=8), nullable=False),
        sa.Column("evidence", sa.Text(), nullable=False),
        sa.Column("dismissed", sa.Boolean(), server_default=sa.false(), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.ForeignKeyConstraint(
            ["adventure_id"],
            ["adventures.id"],
            name=op.f("fk_world_events_adventure_id_adventures"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["action_id"],
            ["actions.id"],
            name=op.f("fk_world_events_action_id_actions"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["branch_id"],
            ["branches.id"],
            name=op.f("fk_world_events_branch_id_branches"),
            ondelete="CASCADE",
        ),
        *(
            sa.ForeignKeyConstraint(
                [column],
                [entity],
                name=op.f(f"fk_world_events_{column}_world_entities"),
                ondelete="CASCADE",
            )
            for column in ("subject_id", "object_id", "target_id")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_world_events")),
    )
    op.create_index("ix_world_events_path", "world_events", ["branch_id", "depth"], unique=False)
    op.create_index(
        op.f("ix_world_events_adventure_id"), "world_events", ["adventure_id"], unique=False
    )
    op.create_index(op.f("ix_world_events_action_id"), "world_events", ["action_id"], unique=False)


def downgrade() -> None:
    op.drop_index(op.f("ix_world_events_action_id"), table_name="world_events")
    op.drop_index(op.f("ix_world_events_adventure_id"), table_name="world_events")
    op.drop_index("ix_world_events_path", table_name="world_events")
    op.drop_table("world_events")
    op.drop_index(op.f("ix_world_entities_adventure_id"), table_name="world_entities")
    op.drop_table("world_entities")
