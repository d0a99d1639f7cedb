"""The library indexer (``services.library.indexer``), one step at a time: batches with
progress, a failed batch and its retry (brought forward by a turn), the words-only state,
a changed model, shared work between indexers, and a claim left by a process that died.

Real parts: a migrated database, the loopback model double (its embeddings, and faults
queued with ``fail_next``), the indexer's own steps awaited one by one.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import numpy as np
import pytest
from sqlalchemy import update
from tests.kit.library_runtime import EMBED, Env, build_env, numbered

from talekeeper.core.clock import utcnow
from talekeeper.services.library import indexer as indexing
from talekeeper.services.library import store
from talekeeper.services.library.indexer import BATCH, STALE, catch_up, retry_delay
from talekeeper.storage.db import session_scope
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


def test_a_source_bigger_than_a_batch_shows_its_progress_batch_by_batch(env: Env) -> None:
    source = env.add(numbered(2 * BATCH + 6), "big.md")
    indexer = env.indexer()
    seen = []
    while env.run(indexer.step()):
        row = env.row(source)
        seen.append((row.state, row.embedded, row.revision))
    assert seen == [
        (SourceState.INDEXING, BATCH, 1),
        (SourceState.INDEXING, 2 * BATCH, 2),
        (SourceState.READY, 2 * BATCH + 6, 3),
    ]
    assert env.double.embedding_calls == 3
    passages = env.passages(source)
    assert all(p.vector_model == EMBED for p in passages)
    for passage in passages[:3]:  # each passage's own vector, in its own row
        assert passage.vector is not None
        vector = np.frombuffer(passage.vector, dtype=np.float32)
        np.testing.assert_allclose(vector, embed_text(passage.text), rtol=1e-5, atol=1e-6)


def test_two_sources_progress_side_by_side(env: Env) -> None:
    first = env.add(numbered(2 * BATCH), "first.md")
    second = env.add(numbered(2 * BATCH), "second.md")
    indexer = env.indexer()
    env.run(indexer.step())
    env.run(indexer.step())
    assert (env.row(first).embedded, env.row(second).embedded) == (BATCH, BATCH)


def test_an_embedding_failure_is_recorded_and_retried_with_a_backoff(env: Env) -> None:
    source = env.add(numbered(3), "a.md")
    indexer = env.indexer()
    env.double.fail_next("500", model=EMBED)
    before = utcnow()
    assert env.run(indexer.step()) is True  # a failure is work done, not a crash
    row = env.row(source)
    assert row.state == SourceState.FAILED and row.failures == 1 and row.embedded == 0
    assert row.error is not None and "HTTP 500" in row.error  # the endpoint's own words
    assert row.retry_at is not None
    assert before + timedelta(seconds=retry_delay(1) - 1) <= row.retry_at
    assert row.retry_at <= utcnow() + timedelta(seconds=retry_delay(1))
    assert row.claimed_by is None  # released
    assert env.run(indexer.step()) is False  # not due yet

    # Due again (its retry time passed), and failing again: the wait doubles.
    with session_scope(env.sessions) as session:
        session.execute(update(LibrarySource).values(retry_at=utcnow() - timedelta(seconds=1)))
    env.double.fail_next("500", model=EMBED)
    assert env.run(indexer.step()) is True
    row = env.row(source)
    assert row.failures == 2 and row.state == SourceState.FAILED
    assert row.retry_at is not None
    assert row.retry_at > utcnow() + timedelta(seconds=retry_delay(2) - 2)
    assert retry_delay(2) == 2 * retry_delay(1) and retry_delay(99) == indexing.RETRY_MAX


def test_a_turn_that_used_a_failed_source_brings_its_retry_forward(env: Env) -> None:
    failed = env.add(numbered(3), "failed.md")
    fine = env.add(numbered(1), "fine.md")
    indexer = env.indexer()
    env.index(indexer)
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
    assert env.run(indexer.step()) is False
    with session_scope(env.sessions) as session:
        catch_up(session, [failed, fine])
    assert env.row(fine).state == SourceState.READY  # a ready source is left alone
    assert env.run(indexer.step()) is True
    row = env.row(failed)
    assert (row.state, row.embedded, row.error, row.failures) == (
        SourceState.READY,
        3,
        None,
        0,
    )


def test_a_words_only_source_is_never_due(tmp_path: Path, double: ModelDouble) -> None:
    for env in build_env(tmp_path, double, embedding_model="none"):
        source = env.add(numbered(3), "w.md")
        assert env.row(source).state == SourceState.WORDS_ONLY
        assert env.run(env.indexer().step()) is False
        assert double.embedding_calls == 0


def test_a_changed_model_re_embeds_and_none_makes_words_only(env: Env) -> None:
    source = env.add(numbered(3), "a.md")
    env.index()
    calls = env.double.embedding_calls
    env.settings(embedding_model=OTHER_EMBED)
    env.index(env.indexer())  # a new indexer compares the models on its first step
    row = env.row(source)
    assert (row.state, row.vector_model, row.embedded) == (SourceState.READY, OTHER_EMBED, 3)
    assert env.double.embedding_calls == calls + 1
    assert {p.vector_model for p in env.passages(source)} == {OTHER_EMBED}
    assert [(r.body or {}).get("model") for r in env.double.requests[-1:]] == [OTHER_EMBED]

    env.settings(embedding_model="none")
    env.index(env.indexer())
    assert env.row(source).state == SourceState.WORDS_ONLY


def test_a_model_changed_between_claim_and_call_is_not_written(env: Env) -> None:
    """The step sees the owner's model differ from the source's: nothing is embedded with
    the wrong model; the next step syncs and embeds with the new one."""
    source = env.add(numbered(2), "a.md")
    indexer = env.indexer()
    indexer.sync_models()
    env.settings(embedding_model=OTHER_EMBED)
    assert env.run(indexer.step()) is True
    assert env.double.embedding_calls == 0 and env.row(source).embedded == 0
    env.index(indexer)
    assert env.row(source).vector_model == OTHER_EMBED
    assert env.row(source).state == SourceState.READY


def test_two_indexers_never_embed_the_same_batch(env: Env) -> None:
    source = env.add(numbered(BATCH), "one-batch.md")
    one, two = env.indexer(), env.indexer()

    async def both() -> list[bool]:
        return list(await asyncio.gather(one.step(), two.step()))

    env.run(both())
    assert env.double.embedding_calls == 1
    assert env.row(source).state == SourceState.READY


def test_a_claim_left_by_a_dead_process_is_taken_over_once_stale(env: Env) -> None:
    source = env.add(numbered(2), "a.md")
    with session_scope(env.sessions) as session:
        session.execute(
            update(LibrarySource).values(claimed_by="dead-process", claimed_at=utcnow())
        )
    indexer = env.indexer()
    assert env.run(indexer.step()) is False  # held by someone else, recently
    with session_scope(env.sessions) as session:
        stale = utcnow() - STALE - timedelta(seconds=1)
        session.execute(update(LibrarySource).values(claimed_at=stale))
    assert env.run(indexer.step()) is True
    assert env.row(source).state == SourceState.READY


def test_a_source_removed_while_its_batch_was_embedded_is_left_alone(env: Env) -> None:
    """The model call happens with no transaction open; the source is gone when the
    vectors come back: nothing is written and the step does not fail."""
    source = env.add(numbered(2), "a.md")
    indexer = env.indexer()
    indexer.sync_models()
    env.double.fail_next("timeout", model=EMBED, delay=0.5)

    async def remove_meanwhile() -> bool:
        stepping = asyncio.create_task(indexer.step())
        await asyncio.sleep(0.2)
        with session_scope(env.sessions) as session:
            store.remove(session, env.user_id, source)
        return await stepping

    assert env.run(remove_meanwhile()) is True
    assert env.passages(source) == []
    assert env.run(indexer.step()) is False


def test_retry_now_goes_on_from_where_it_stopped_and_keeps_the_vectors_made(env: Env) -> None:
    source = env.add(numbered(2 * BATCH + 6), "big.md")
    indexer = env.indexer()
    assert env.run(indexer.step()) is True  # the first batch
    env.double.fail_next("500", model=EMBED)
    assert env.run(indexer.step()) is True  # the second fails
    row = env.row(source)
    assert (row.state, row.embedded) == (SourceState.FAILED, BATCH)
    assert env.run(indexer.step()) is False  # not due yet
    with session_scope(env.sessions) as session:
        catch_up(session, [source])
    calls = env.double.embedding_calls
    while env.run(indexer.step()):
        pass
    row = env.row(source)
    assert (row.state, row.embedded) == (SourceState.READY, 2 * BATCH + 6)
    assert env.double.embedding_calls - calls == 2  # only the batches still missing
    with session_scope(env.sessions) as session:  # a ready source is left as it is
        catch_up(session, [source])
    assert env.row(source).retry_at is None and env.run(indexer.step()) is False


def test_a_sync_that_finds_every_source_in_step_writes_nothing(env: Env) -> None:
    source = env.add(numbered(3), "a.md")
    indexer = env.indexer()
    env.index(indexer)
    before = env.row(source)
    indexer.sync_models()  # the model is the one the vectors were made with
    after = env.row(source)
    assert (after.updated_at, after.revision, after.state) == (
        before.updated_at,
        before.revision,
        SourceState.READY,
    )
