"""A writer process for the revision-counter test: ``python -m tests.storage.revision_writer URL
ADVENTURE BRANCH N TAG`` adds N memories, one per transaction, through the bank's one
place memories are made (``new_memory``).

Its engine is plain SQLAlchemy, without the app's writer lock, so that two of these
processes write at the same moment and only the revision counter's row lock orders them.
Each transaction waits a moment after taking its revision, which is when a ``max + 1``
revision would be taken by the other writer too.
"""

from __future__ import annotations

import sys
import time

from sqlalchemy import create_engine
from sqlalchemy.orm import sessionmaker

from talekeeper.services.memory.bank import new_memory
from talekeeper.services.memory.cache import pack

MODEL = "counter-test"


def main(url: str, adventure_id: int, branch_id: int, n: int, tag: str) -> None:
    engine = create_engine(url)
    sessions = sessionmaker(engine)
    for i in range(n):
        with sessions.begin() as session:
            new_memory(
                session,
                adventure_id,
                f"{tag} remembers thing {i}.",
                branch_id=branch_id,
                depth=0,
                vector=pack([1.0, float(i)]),
                vector_model=MODEL,
            )
            time.sleep(0.002)
    engine.dispose()


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), sys.argv[5])
