"""The library indexer (``services.library.indexer``): a source's run, batch by batch with
progress; a failed batch and its retry after a backoff, asked for through the background
port and brought forward by a turn or the player; the words-only state; a changed model;
and the runs asked for in the units that make the work, run by the background work on
either database, without a turn.

Real parts: a migrated database (SQLite, or PostgreSQL with ``--db=postgresql``: the same
tests then go through procrastinate's queue), the runtime's own background work and
indexer, the loopback model double (its embeddings, and faults queued with
``fail_next``). A step (one batch) is awaited on its own where a test reads the progress
between batches.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import numpy as np
import pytest
from sqlalchemy import update
from tests.kit.library_runtime import EMBED, Env, build_env, numbered

from talekeeper.core.clock import utcnow
from talekeeper.services.background.port import Subject
from talekeeper.services.library import indexer as indexing
from talekeeper.services.library import store
from talekeeper.services.library.indexer import BATCH, Outcome, retry_delay
from talekeeper.storage.db import read_scope, session_scope
from talekeeper.storage.models import LibrarySource
from talekeeper.storage.vocabulary import SourceState
from talekeeper_testkit.double import ModelDouble, embed_text

OTHER_EMBED = "double-embed-2"


@pytest.fixture
def double() -> Iterator[ModelDouble]:
    """The double, offering a second embedding model to change to."""
    models = ("double-narrator", EMBED, "double-summary", OTHER_EMBED)
    with ModelDouble(models=models) as server:
        yield server


@pytest.fixture
def env(tmp_path: Path, double: ModelDouble) -> Iterator[Env]:
    yield from build_env(tmp_path, double)


def pending(env: Env, source_id: int) -> bool:
    """Whether a run of the source waits or goes on, as the port says."""
    background = env.runtime.background
    assert background is not None
    with read_scope(env.sessions) as session:
        return background.pending(session, Subject.library_source(source_id))


def settle(env: Env, source_id: int, timeout: float = 20.0) -> LibrarySource:
    """With the background work started: wait until the source neither indexes nor waits."""
    deadline = time.monotonic() + timeout
    while env.row(source_id).state == SourceState.INDEXING or pending(env, source_id):
        assert time.monotonic() < deadline, env.row(source_id).state
        env.run(asyncio.sleep(0.05))
    return env.row(source_id)


def test_a_source_bigger_than_a_batch_shows_its_progress_batch_by_batch(env: Env) -> None:
    source = env.add(numbered(2 * BATCH + 6), "big.md")
    seen = []
    for _ in range(3):
        outcome = env.run(env.indexer.step(source))
        row = env.row(source)
        seen.append((outcome, row.state, row.embedded, row.revision))
    assert seen == [
        (Outcome.EMBEDDED, SourceState.INDEXING, BATCH, 1),
        (Outcome.EMBEDDED, SourceState.INDEXING, 2 * BATCH, 2),
        (Outcome.DONE, SourceState.READY, 2 * BATCH + 6, 3),
    ]
    assert env.run(env.indexer.step(source)) is Outcome.NOTHING  # ready: nothing to do
    assert env.double.embedding_calls == 3
    passages = env.passages(source)
    assert all(p.vector_model == EMBED for p in passages)
    for passage in passages[:3]:  # each passage's own vector, in its own row
        assert passage.vector is not None
        vector = np.frombuffer(passage.vector, dtype=np.float32)
        np.testing.assert_allclose(vector, embed_text(passage.text), rtol=1e-5, atol=1e-6)


def test_uploads_are_indexed_by_the_background_work_without_a_turn(env: Env) -> None:
    first = env.add(numbered(2 * BATCH), "first.md", schedule=True)
    second = env.add(numbered(BATCH + 3, "compass"), "second.md", schedule=True)
    assert pending(env, first) and pending(env, second)  # asked for with the upload
    env.run(env.runtime.start())
    for source, total in ((first, 2 * BATCH), (second, BATCH + 3)):
        row = settle(env, source)
        assert (row.state, row.embedded) == (SourceState.READY, total)
    assert env.double.embedding_calls == 4  # each batch once


def test_an_embedding_failure_is_recorded_and_its_retry_asked_for_after_a_backoff(
    env: Env,
) -> None:
    source = env.add(numbered(3), "a.md")
    env.double.fail_next("500", model=EMBED)
    before = utcnow()
    assert env.run(env.indexer.step(source)) is Outcome.FAILED  # recorded, not raised
    row = env.row(source)
    assert row.state == SourceState.FAILED and row.failures == 1 and row.embedded == 0
    assert row.error is not None and "HTTP 500" in row.error  # the endpoint's own words
    assert row.retry_at is not None
    assert before + timedelta(seconds=retry_delay(1) - 1) <= row.retry_at
    assert row.retry_at <= utcnow() + timedelta(seconds=retry_delay(1))
    assert pending(env, source)  # its retry is asked for, in the queue ...

    env.run(env.runtime.start())
    env.run(env.runtime.memory.idle(timeout=5))  # ... and is no work to wait for yet
    env.run(asyncio.sleep(0.5))
    assert env.row(source).state == SourceState.FAILED
    assert env.double.embedding_calls == 0  # (a fault is not counted as a call)

    # Its retry's run, failing again: the wait doubles.
    env.double.fail_next("500", model=EMBED)
    assert env.run(env.indexer.step(source)) is Outcome.FAILED
    row = env.row(source)
    assert row.failures == 2 and row.state == SourceState.FAILED
    assert row.retry_at is not None
    assert row.retry_at > utcnow() + timedelta(seconds=retry_delay(2) - 2)
    assert retry_delay(2) == 2 * retry_delay(1) and retry_delay(99) == indexing.RETRY_MAX


def test_a_failed_source_is_retried_by_the_background_work_when_its_time_comes(
    env: Env, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(indexing, "RETRY_FIRST", 0.3)
    source = env.add(numbered(3), "a.md", schedule=True)
    env.double.fail_next("500", model=EMBED)
    env.run(env.runtime.start())
    row = settle(env, source)
    assert (row.state, row.failures, row.error) == (SourceState.READY, 0, None)
    assert env.double.embedding_calls == 1  # the retry's (a fault is not counted)


def test_a_turn_that_used_a_failed_source_brings_its_retry_forward(env: Env) -> None:
    failed = env.add(numbered(3), "failed.md")
    fine = env.add(numbered(1), "fine.md")
    env.index()
    with session_scope(env.sessions) as session:  # failed long ago, retried in an hour
        session.execute(
            update(LibrarySource)
            .where(LibrarySource.id == failed)
            .values(
                state=SourceState.FAILED,
                error="The endpoint timed out.",
                failures=7,
                retry_at=utcnow() + timedelta(hours=1),
                embedded=0,
            )
        )
        env.indexer.background.request(session, Subject.library_source(failed), timedelta(hours=1))
    env.run(env.runtime.start())
    env.run(asyncio.sleep(0.3))
    assert env.row(failed).state == SourceState.FAILED  # not before its hour
    with session_scope(env.sessions) as session:
        assert env.indexer.catch_up(session, [failed, fine]) == [failed]
    assert env.row(fine).state == SourceState.READY and not pending(env, fine)  # left alone
    row = settle(env, failed)
    assert (row.state, row.embedded, row.error, row.failures, row.retry_at) == (
        SourceState.READY,
        3,
        None,
        0,
        None,
    )


def test_a_words_only_source_is_never_asked_for(tmp_path: Path, double: ModelDouble) -> None:
    for env in build_env(tmp_path, double, embedding_model="none"):
        source = env.add(numbered(3), "w.md")
        assert env.row(source).state == SourceState.WORDS_ONLY
        env.indexer.reconcile()
        assert not pending(env, source)
        assert env.run(env.indexer.step(source)) is Outcome.NOTHING
        assert double.embedding_calls == 0


def test_a_model_changed_in_the_settings_re_embeds_and_none_makes_words_only(
    env: Env,
) -> None:
    source = env.add(numbered(3), "a.md")
    env.index()
    calls = env.double.embedding_calls
    with session_scope(env.sessions) as session:  # as the settings page saves it
        env.runtime.save_overrides(session, env.user_id, {"embedding_model": OTHER_EMBED})
    row = env.row(source)
    assert (row.state, row.vector_model, row.embedded) == (SourceState.INDEXING, OTHER_EMBED, 0)
    assert pending(env, source)  # asked for in the same unit as the settings
    env.run(env.runtime.start())
    row = settle(env, source)
    assert (row.state, row.vector_model, row.embedded) == (SourceState.READY, OTHER_EMBED, 3)
    assert env.double.embedding_calls == calls + 1
    assert {p.vector_model for p in env.passages(source)} == {OTHER_EMBED}
    assert [(r.body or {}).get("model") for r in env.double.requests[-1:]] == [OTHER_EMBED]

    with session_scope(env.sessions) as session:
        env.runtime.save_overrides(session, env.user_id, {"embedding_model": "none"})
    assert env.row(source).state == SourceState.WORDS_ONLY


def test_a_start_reconciles_a_model_changed_elsewhere_and_sources_never_asked_for(
    env: Env,
) -> None:
    """A source left indexing with no job (written by an older version), and a model
    changed behind the indexer's back: the start of the background work asks for both."""
    done = env.add(numbered(2), "done.md")
    env.index()
    left = env.add(numbered(2), "left.md")  # stored, its run never asked for
    env.settings(embedding_model=OTHER_EMBED)  # not through the settings page
    assert not pending(env, left) and env.row(done).vector_model == EMBED
    env.run(env.runtime.start())
    for source in (done, left):
        row = settle(env, source)
        assert (row.state, row.vector_model, row.embedded) == (SourceState.READY, OTHER_EMBED, 2)


def test_a_model_changed_between_the_read_and_the_call_is_not_written(env: Env) -> None:
    """The step sees the owner's model differ from the source's: nothing is embedded with
    the wrong model; the sources start again with the new one, and are asked for."""
    source = env.add(numbered(2), "a.md")
    env.settings(embedding_model=OTHER_EMBED)
    assert env.run(env.indexer.step(source)) is Outcome.RESYNCED
    assert env.double.embedding_calls == 0 and env.row(source).embedded == 0
    assert env.row(source).vector_model == OTHER_EMBED and pending(env, source)
    env.index()
    assert env.row(source).state == SourceState.READY


def test_a_source_removed_while_its_batch_was_embedded_is_left_alone(env: Env) -> None:
    """The model call happens with no transaction open; the source is gone when the
    answer comes back: nothing is written and the run does not fail."""
    source = env.add(numbered(2), "a.md")
    env.double.fail_next("timeout", model=EMBED, delay=0.5)

    async def remove_meanwhile() -> Outcome:
        stepping = asyncio.create_task(env.indexer.step(source))
        await asyncio.sleep(0.2)
        with session_scope(env.sessions) as session:
            store.remove(session, env.user_id, source)
        return await stepping

    assert env.run(remove_meanwhile()) is Outcome.NOTHING
    assert env.passages(source) == []
    assert env.run(env.indexer.step(source)) is Outcome.NOTHING
    env.run(env.indexer.run(source))  # a job left for it ends quietly


def test_retry_now_goes_on_from_where_it_stopped_and_keeps_the_vectors_made(env: Env) -> None:
    source = env.add(numbered(2 * BATCH + 6), "big.md")
    assert env.run(env.indexer.step(source)) is Outcome.EMBEDDED  # the first batch
    env.double.fail_next("500", model=EMBED)
    env.run(env.indexer.run(source))  # the second fails: the run ends there
    row = env.row(source)
    assert (row.state, row.embedded) == (SourceState.FAILED, BATCH)
    with session_scope(env.sessions) as session:
        env.indexer.catch_up(session, [source])
    calls = env.double.embedding_calls
    env.run(env.runtime.start())
    row = settle(env, source)
    assert (row.state, row.embedded) == (SourceState.READY, 2 * BATCH + 6)
    assert env.double.embedding_calls - calls == 2  # only the batches still missing
    with session_scope(env.sessions) as session:  # a ready source is left as it is
        assert env.indexer.catch_up(session, [source]) == []
    assert env.row(source).retry_at is None and not pending(env, source)


def test_a_reconcile_that_finds_every_source_in_step_writes_nothing(env: Env) -> None:
    source = env.add(numbered(3), "a.md")
    env.index()
    before = env.row(source)
    env.indexer.reconcile()  # the model is the one the vectors were made with
    after = env.row(source)
    assert (after.updated_at, after.revision, after.state) == (
        before.updated_at,
        before.revision,
        SourceState.READY,
    )
    assert not pending(env, source)
