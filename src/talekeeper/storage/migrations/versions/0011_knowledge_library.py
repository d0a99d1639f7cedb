"""The knowledge library: a user's sources (uploaded documents), their passages with where
each came from and its vector, the sources attached to each adventure, and the passages'
full-text index (``storage.fulltext``: FTS5 on SQLite, a GIN index on PostgreSQL).

Revision ID: 0011
Revises: 0010
Create Date: 2026-12-07
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from talekeeper.storage import fulltext

revision: str = "0011"
down_revision: str | None = "0010"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# Row ids: BIGINT on PostgreSQL; on SQLite INTEGER, whose key is the 64-bit rowid.
ID = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    op.create_table(
        "library_sources",
        sa.Column("id", ID, nullable=False),
        sa.Column("user_id", ID, nullable=False),
        sa.Column("title", sa.String(length=300), nullable=False),
        sa.Column("filename", sa.String(length=255), nullable=False),
        sa.Column("kind", sa.String(length=8), nullable=False),
        sa.Column("size_bytes", sa.Integer(), nullable=False),
        sa.Column("characters", sa.Integer(), nullable=False),
        sa.Column("passage_count", sa.Integer(), nullable=False),
        sa.Column("token_count", sa.Integer(), nullable=False),
        sa.Column("state", sa.String(length=12), nullable=False),
        sa.Column("vector_model", sa.String(length=255), nullable=True),
        sa.Column("embedded", sa.Integer(), nullable=False),
        sa.Column("revision", sa.Integer(), nullable=False),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("failures", sa.Integer(), nullable=False),
        sa.Column("retry_at", sa.DateTime(), nullable=True),
        sa.Column("claimed_by", sa.String(length=64), nullable=True),
        sa.Column("claimed_at", sa.DateTime(), nullable=True),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("updated_at", sa.DateTime(), nullable=False),
        sa.ForeignKeyConstraint(
            ["user_id"],
            ["users.id"],
            name=op.f("fk_library_sources_user_id_users"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_library_sources")),
    )
    op.create_index(op.f("ix_library_sources_user_id"), "library_sources", ["user_id"])
    op.create_table(
        "library_passages",
        sa.Column("id", ID, nullable=False),
        sa.Column("source_id", ID, nullable=False),
        sa.Column("position", sa.Integer(), nullable=False),
        sa.Column("heading_path", sa.Text(), nullable=False),
        sa.Column("page", sa.Integer(), nullable=True),
        sa.Column("text", sa.Text(), nullable=False),
        sa.Column("tokens", sa.Integer(), nullable=False),
        sa.Column("terms", sa.Text(), nullable=False),
        sa.Column("vector", sa.LargeBinary(), nullable=True),
        sa.Column("vector_model", sa.String(length=255), nullable=True),
        sa.ForeignKeyConstraint(
            ["source_id"],
            ["library_sources.id"],
            name=op.f("fk_library_passages_source_id_library_sources"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_library_passages")),
    )
    op.create_index(
        "ix_library_passages_source_id_position",
        "library_passages",
        ["source_id", "position"],
        unique=True,
    )
    op.create_table(
        "adventure_knowledge",
        sa.Column("adventure_id", ID, nullable=False),
        sa.Column("source_id", ID, nullable=False),
        sa.Column("attached_at", sa.DateTime(), nullable=False),
        sa.ForeignKeyConstraint(
            ["adventure_id"],
            ["adventures.id"],
            name=op.f("fk_adventure_knowledge_adventure_id_adventures"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["source_id"],
            ["library_sources.id"],
            name=op.f("fk_adventure_knowledge_source_id_library_sources"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("adventure_id", "source_id", name=op.f("pk_adventure_knowledge")),
    )
    op.create_index(op.f("ix_adventure_knowledge_source_id"), "adventure_knowledge", ["source_id"])
    fulltext.create(op.get_bind())


def downgrade() -> None:
    fulltext.drop(op.get_bind())
    op.drop_index(op.f("ix_adventure_knowledge_source_id"), table_name="adventure_knowledge")
    op.drop_table("adventure_knowledge")
    op.drop_index("ix_library_passages_source_id_position", table_name="library_passages")
    op.drop_table("library_passages")
    op.drop_index(op.f("ix_library_sources_user_id"), table_name="library_sources")
    op.drop_table("library_sources")
