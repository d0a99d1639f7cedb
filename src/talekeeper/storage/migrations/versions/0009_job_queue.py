"""The job queue of a PostgreSQL database: procrastinate's tables, types and functions, where
every process sharing the server defers background work and any ``talekeeper worker`` runs
it. A SQLite database keeps its ``derived_jobs`` outbox and gains nothing.

The schema is the one the installed procrastinate ships (``SchemaManager.get_schema``),
applied here so that migrations stay the only step that changes a schema (nothing runs
``procrastinate schema --apply``). A later procrastinate whose release adds SQL migrations
(``procrastinate/sql/migrations``) comes with a migration here that applies them. The
downgrade drops every object whose name starts with ``procrastinate_`` in the schema the
upgrade wrote to (tables with their triggers and indexes, then functions, then types), so
it undoes whichever version's schema was applied. Jobs waiting in the queue are lost on
the way down; the next turn of each adventure asks for its work again.

Revision ID: 0009
Revises: 0008
Create Date: 2026-12-05
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from procrastinate.schema import SchemaManager

from talekeeper.storage.dialect import JobQueue, job_queue

revision: str = "0009"
down_revision: str | None = "0008"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

PREFIX = "procrastinate\\_%"  # a LIKE pattern: the underscore is literal


def upgrade() -> None:
    bind = op.get_bind()
    if job_queue(bind) is not JobQueue.SHARED:
        return
    # The driver formats "%" (the schema's RAISE messages hold some) whenever it is given
    # parameters, which SQLAlchemy always gives: doubled, each reaches the server once.
    bind.exec_driver_sql(SchemaManager.get_schema().replace("%", "%%"))


def downgrade() -> None:
    bind = op.get_bind()
    if job_queue(bind) is not JobQueue.SHARED:
        return
    tables = bind.execute(
        sa.text(
            "SELECT tablename FROM pg_tables "
            "WHERE schemaname = current_schema() AND tablename LIKE :prefix"
        ),
        {"prefix": PREFIX},
    ).scalars()
    for table in list(tables):
        bind.exec_driver_sql(f'DROP TABLE IF EXISTS "{table}" CASCADE')
    functions = bind.execute(
        sa.text(
            "SELECT p.oid::regprocedure::text FROM pg_proc p "
            "JOIN pg_namespace n ON n.oid = p.pronamespace "
            "WHERE n.nspname = current_schema() AND p.proname LIKE :prefix"
        ),
        {"prefix": PREFIX},
    ).scalars()
    for function in list(functions):  # regprocedure text: quoted as needed, with its arguments
        bind.exec_driver_sql(f"DROP FUNCTION IF EXISTS {function} CASCADE")
    types = bind.execute(
        sa.text(
            "SELECT t.typname FROM pg_type t "
            "JOIN pg_namespace n ON n.oid = t.typnamespace "
            "WHERE n.nspname = current_schema() AND t.typname LIKE :prefix "
            "AND t.typtype IN ('c', 'e', 'd')"
        ),
        {"prefix": PREFIX},
    ).scalars()
    for type_ in list(types):
        bind.exec_driver_sql(f'DROP TYPE IF EXISTS "{type_}" CASCADE')
