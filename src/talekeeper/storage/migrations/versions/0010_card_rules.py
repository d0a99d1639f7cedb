"""Story cards gain the rules of when they enter the context: ``always_on`` (in the Story
Cards section every turn, first), ``secondary_keywords`` (a JSON list of text, like
``keywords``) and ``secondary_rule`` (any / all / none: how the secondary keywords join a
primary one). Existing cards get the defaults, so each fires exactly as before: not always
on, no secondary keywords.

Revision ID: 0010
Revises: 0009
Create Date: 2026-12-06
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0010"
down_revision: str | None = "0009"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

COLUMNS = ("always_on", "secondary_keywords", "secondary_rule")


def upgrade() -> None:
    # Native ALTER TABLE (SQLite 3.35+ for the drop), never a batch copy of the table.
    op.add_column(
        "story_cards",
        sa.Column("always_on", sa.Boolean(), nullable=False, server_default=sa.false()),
    )
    op.add_column(
        "story_cards",
        sa.Column("secondary_keywords", sa.Text(), nullable=False, server_default="[]"),
    )
    op.add_column(
        "story_cards",
        sa.Column("secondary_rule", sa.String(length=8), nullable=False, server_default="any"),
    )


def downgrade() -> None:
    for column in reversed(COLUMNS):
        op.drop_column("story_cards", column)
