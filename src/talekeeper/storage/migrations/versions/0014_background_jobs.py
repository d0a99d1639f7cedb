"""One queue of background work for every subject: ``background_jobs`` replaces
``derived_jobs``, keyed by what a job works on (``kind``: an adventure's memory passes or a
library source's vectors; ``subject_id``) and able to wait (``run_after``, a retry's
backoff). The library indexer's own claims on ``library_sources`` (``claimed_by``,
``claimed_at``) go: its runs are claimed as every other job is.

Each waiting adventure job is copied with its claim. Sources waiting for vectors need no
row here: every start of background work asks for the runs of every source still indexing
or failed (``services.library.indexer.LibraryIndexer.reconcile``), on either database.

Revision ID: 0014
Revises: 0013
Create Date: 2026-12-06
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0014"
down_revision: str | None = "0013"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# Row ids: BIGINT on PostgreSQL; on SQLite INTEGER, whose key is the 64-bit rowid.
ID = sa.BigInteger().with_variant(sa.Integer(), "sqlite")
ADVENTURE = "adventure"  # ``vocabulary.WorkKind.ADVENTURE`` when this was written


def upgrade() -> None:
    op.create_table(
        "background_jobs",
        sa.Column("kind", sa.String(length=16), nullable=False),
        sa.Column("subject_id", ID, nullable=False),
        sa.Column("requested_at", sa.DateTime(), nullable=False),
        sa.Column("run_after", sa.DateTime(), nullable=True),
        sa.Column("claimed_at", sa.DateTime(), nullable=True),
        sa.Column("claimed_by", sa.String(length=64), nullable=True),
        sa.PrimaryKeyConstraint("kind", "subject_id", name=op.f("pk_background_jobs")),
    )
    op.execute(
        sa.text(
            "INSERT INTO background_jobs "
            "(kind, subject_id, requested_at, run_after, claimed_at, claimed_by) "
            "SELECT :kind, adventure_id, requested_at, NULL, claimed_at, claimed_by "
            "FROM derived_jobs"
        ).bindparams(kind=ADVENTURE)
    )
    op.drop_table("derived_jobs")
    with op.batch_alter_table("library_sources") as batch:
        batch.drop_column("claimed_by")
        batch.drop_column("claimed_at")


def downgrade() -> None:
    with op.batch_alter_table("library_sources") as batch:
        batch.add_column(sa.Column("claimed_by", sa.String(length=64), nullable=True))
        batch.add_column(sa.Column("claimed_at", sa.DateTime(), nullable=True))
    op.create_table(
        "derived_jobs",
        sa.Column("adventure_id", ID, nullable=False),
        sa.Column("requested_at", sa.DateTime(), nullable=False),
        sa.Column("claimed_at", sa.DateTime(), nullable=True),
        sa.Column("claimed_by", sa.String(length=64), nullable=True),
        sa.ForeignKeyConstraint(
            ["adventure_id"],
            ["adventures.id"],
            name=op.f("fk_derived_jobs_adventure_id_adventures"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("adventure_id", name=op.f("pk_derived_jobs")),
    )
    op.execute(
        sa.text(
            "INSERT INTO derived_jobs (adventure_id, requested_at, claimed_at, claimed_by) "
            "SELECT subject_id, requested_at, claimed_at, claimed_by FROM background_jobs "
            "WHERE kind = :kind AND subject_id IN (SELECT id FROM adventures)"
        ).bindparams(kind=ADVENTURE)
    )
    op.drop_table("background_jobs")
