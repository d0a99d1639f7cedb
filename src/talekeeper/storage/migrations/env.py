"""Alembic environment: runs migrations on the engine handed over by ``storage.migrate``."""

from __future__ import annotations

from alembic import context
from sqlalchemy import Engine

from talekeeper.storage.dialect import alters_by_copy
from talekeeper.storage.migrate import ours
from talekeeper.storage.models import Base

engine = context.config.attributes.get("engine")
if not isinstance(engine, Engine):  # pragma: no cover - only if someone runs the alembic CLI
    raise RuntimeError("run migrations with `talekeeper db upgrade`, not the alembic command")

with engine.connect() as connection:
    context.configure(
        connection=connection,
        target_metadata=Base.metadata,
        render_as_batch=alters_by_copy(connection),
        compare_type=True,
        include_name=ours,  # the job queue's tables are procrastinate's, not the models'
    )
    with context.begin_transaction():
        context.run_migrations()
    connection.commit()
