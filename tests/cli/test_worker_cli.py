"""``talekeeper worker``, run as a real subprocess: on PostgreSQL it runs the background
passes of turns played through the app (which runs none itself, as ``talekeeper serve``
does), stops on SIGTERM, and when one worker is killed in the middle of a run another
runs it again without writing anything twice. On SQLite it refuses to start.

Real parts: the app on the loopback model double, a database of the throwaway PostgreSQL
cluster, worker processes started as a user would (``python -m talekeeper worker``),
SIGTERM and SIGKILL.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from tests.conftest import LOCAL, data_env, double_settings

from talekeeper.services.background import queue
from talekeeper.web.app import create_app
from talekeeper_testkit import pg
from talekeeper_testkit.double import Json, ModelDouble, summarize

TIMEOUT = 60  # seconds for anything to happen: a hang fails the test instead of the suite
STALLED_AFTER = "1.5"  # seconds: a killed worker's run is taken back quickly
ON_POSTGRESQL = pytest.mark.postgresql_only("talekeeper worker runs PostgreSQL's job queue")


def worker_env(data: Path, double: ModelDouble) -> dict[str, str]:
    return {
        **data_env(data),
        "TALEKEEPER_ENDPOINT_URL": double.url,
        "TALEKEEPER_MODEL": "double-narrator",
        "TALEKEEPER_EMBEDDING_MODEL": "double-embed",
        "TALEKEEPER_SUMMARY_MODEL": "double-summary",
        "TALEKEEPER_TIMEOUT": "30",
        "PATH": os.environ["PATH"],
    }


@contextmanager
def worker(env: dict[str, str], *args: str) -> Iterator[subprocess.Popen[str]]:
    process = subprocess.Popen(
        [sys.executable, "-m", "talekeeper", "worker", "--stalled-after", STALLED_AFTER, *args],
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        yield process
    finally:
        if process.poll() is None:
            process.kill()
        process.communicate(timeout=TIMEOUT)


def until(condition: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + TIMEOUT
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.1)


@pytest.fixture
def app(tmp_path: Path, double: ModelDouble) -> Iterator[TestClient]:
    """The app as ``talekeeper serve`` runs it: it runs no background passes itself."""
    settings = double_settings(tmp_path, double, timeout="30")
    with TestClient(create_app(settings, queue_worker=False), base_url=LOCAL) as client:
        yield client


def new_game_of_13_actions(client: TestClient) -> int:
    """An adventure whose first two memory blocks (actions 0-5 and 6-11) are due."""
    aid: int = client.post("/api/adventures", json={"scenario": "lantern-coast"}).json()["id"]
    for i in range(6):
        response = client.post(
            f"/api/adventures/{aid}/actions", json={"type": "do", "text": f"look around {i}"}
        )
        assert response.status_code == 200, response.text
    return aid


def ranges(client: TestClient, aid: int) -> list[tuple[int, int]]:
    rows: list[dict[str, Any]] = client.get(f"/api/adventures/{aid}/memories").json()
    return sorted((m["source_start"], m["source_end"]) for m in rows)


def pending(client: TestClient, aid: int) -> bool:
    return bool(client.get(f"/api/adventures/{aid}/derived").json()["pending"])


def registered_workers(client: TestClient) -> int:
    url = client.app.state.runtime.settings.resolved_database_url  # type: ignore[attr-defined]
    with pg.connect(url) as connection:
        row = connection.execute("SELECT count(*) FROM procrastinate_workers").fetchone()
        return int(row[0]) if row else 0


@ON_POSTGRESQL
def test_a_worker_runs_the_passes_of_turns_played_through_the_app_and_stops_on_sigterm(
    app: TestClient, double: ModelDouble, tmp_path: Path
) -> None:
    aid = new_game_of_13_actions(app)
    time.sleep(1.0)  # ample for an in-process worker, were there one
    assert ranges(app, aid) == [] and pending(app, aid)  # the app ran nothing: it waits
    with worker(worker_env(tmp_path / "data", double)) as process:
        until(lambda: ranges(app, aid) == [(0, 5), (6, 11)], "the worker's memories")
        until(lambda: not pending(app, aid), "the job to be done")
        assert registered_workers(app) == 1
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=TIMEOUT) == 0
        out, err = process.communicate(timeout=TIMEOUT)
    assert "Traceback" not in err, err
    assert "worker" in err and out == ""
    assert registered_workers(app) == 0  # it said goodbye: nothing for others to take over


def database_name(client: TestClient) -> str:
    url = client.app.state.runtime.engine.url  # type: ignore[attr-defined]
    return str(url.database)


@ON_POSTGRESQL
def test_a_worker_outlives_a_database_outage(
    app: TestClient, double: ModelDouble, tmp_path: Path
) -> None:
    """The server refuses every connection for a while (a restart): the worker's own stops,
    and ``talekeeper worker`` starts it again rather than ending."""
    assert pg.active is not None
    name = database_name(app)
    with worker(worker_env(tmp_path / "data", double)) as process:
        until(lambda: registered_workers(app) == 1, "the worker to start")
        with pg.active.cluster.admin() as admin:
            admin.execute(f"ALTER DATABASE {name} WITH ALLOW_CONNECTIONS false")
            admin.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s",
                (name,),
            )
            time.sleep(2.0)
            admin.execute(f"ALTER DATABASE {name} WITH ALLOW_CONNECTIONS true")
        aid = new_game_of_13_actions(app)
        until(lambda: ranges(app, aid) == [(0, 5), (6, 11)], "the memories after the outage")
        assert process.poll() is None
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=TIMEOUT) == 0
        _, err = process.communicate(timeout=TIMEOUT)
    assert "it starts again" in err, err


class Hold:
    """The summary model's answers, except that the ``at``-th request is held until
    ``release``: a model still thinking when its worker is killed."""

    def __init__(self, at: int) -> None:
        self.at = at
        self.calls = 0
        self.lock = threading.Lock()
        self.arrived = threading.Event()
        self.release = threading.Event()

    def __call__(self, body: Json) -> str:
        with self.lock:
            self.calls += 1
            held = self.calls == self.at
        if held:
            self.arrived.set()
            self.release.wait(TIMEOUT)
        return summarize(body)


@ON_POSTGRESQL
def test_a_killed_workers_run_runs_again_on_another_and_writes_nothing_twice(
    app: TestClient, double: ModelDouble, tmp_path: Path
) -> None:
    hold = Hold(at=2)  # the memory of block 6-11, after that of block 0-5 was saved
    double.responders["double-summary"] = hold
    env = worker_env(tmp_path / "data", double)
    aid = new_game_of_13_actions(app)
    try:
        with worker(env) as first:
            assert hold.arrived.wait(TIMEOUT), "the first worker never reached the second block"
            assert ranges(app, aid) == [(0, 5)]
            first.kill()  # SIGKILL: no goodbye, its job left "doing", its lock held
            assert first.wait(timeout=TIMEOUT) == -signal.SIGKILL
        assert pending(app, aid)
        with worker(env) as second:
            until(lambda: ranges(app, aid) == [(0, 5), (6, 11)], "the run to be done again")
            until(lambda: not pending(app, aid), "the job to be done")
            second.send_signal(signal.SIGTERM)
            assert second.wait(timeout=TIMEOUT) == 0
            _, err = second.communicate(timeout=TIMEOUT)
        assert "runs again" in err, err  # the second worker took the killed one's run back
        assert hold.calls == 3  # block 0-5 was not asked for again: its memory was kept
        rows = app.get(f"/api/adventures/{aid}/memories").json()
        assert len(rows) == 2  # nothing written twice
    finally:
        hold.release.set()


@pytest.mark.sqlite_only("the refusal is SQLite's: its passes run in the serving process")
def test_on_sqlite_the_worker_refuses_to_start(tmp_path: Path) -> None:
    env = {"TALEKEEPER_DATA_DIR": str(tmp_path / "data"), "PATH": os.environ["PATH"]}
    done = subprocess.run(
        [sys.executable, "-m", "talekeeper", "worker"],
        env=env,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
    )
    assert done.returncode == 2
    assert done.stdout == ""
    assert done.stderr.strip().splitlines() == [
        "talekeeper: 'talekeeper worker' is for a PostgreSQL database (TALEKEEPER_DATABASE_URL); "
        "on SQLite the in-process worker of 'talekeeper serve' (or 'talekeeper play') already "
        "runs the background passes, so there is nothing to start."
    ]
    assert not (tmp_path / "data" / "talekeeper.db").exists()  # refused before opening it


def test_the_help_gives_the_queues_own_defaults() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "talekeeper", "worker", "--help"],
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        env={"PATH": os.environ["PATH"], "COLUMNS": "200"},
    )
    assert done.returncode == 0
    help_text = " ".join(done.stdout.split())
    assert f"(default: {queue.CONCURRENCY})" in help_text
    assert f"(default: {queue.STALLED_AFTER:g})" in help_text
    assert f"(default: {queue.GRACE_SECONDS:g})" in help_text
