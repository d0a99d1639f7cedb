"""What both concurrency runs share: the live server, the failure monitor, the wait for
background work and the start of many clients at once.

The real app (``talekeeper.web.app.create_app``) is served by uvicorn on loopback in this
process (``talekeeper_testkit.live``), on a fresh migrated SQLite file (WAL) under the given
folder, with the loopback model double (``talekeeper_testkit.double``, a real
OpenAI-compatible HTTP server) as narrator (``double-narrator``, the fixed ~110-word
``REPLY`` at once), embedder (``double-embed``) and summary model (``double-summary``, which
writes memories and summaries deterministically), as the test suite configures it. Both are
imported from ``tests/``: the runs start from the repository root
(``python -m benchmarks.concurrency.run``), as ``benchmarks/recall`` does.

Evidence of failure gathered here: every WARNING or worse the server logs in this process
(``LogTap``), and every failed background pass (``Monitor`` polls ``GET /api/derived``
every ``MONITOR_SECONDS`` and keeps distinct ``last_failure_at`` stamps, so two failures
of one kind between two polls count once). Background work is idle when
``GET /api/adventures/{id}/derived`` shows every kind idle (or failed) and nothing pending;
waiting for it gives up, with an error, after ``DRAIN_TIMEOUT``.

``run_together`` starts one thread per client; each passes the barrier when it is ready to
send its first request, and the clock starts when all have.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx

from talekeeper.settings import Settings, load_settings
from talekeeper.web.app import create_app
from talekeeper_testkit.double import ModelDouble
from talekeeper_testkit.live import serving

MONITOR_SECONDS = 0.25
DRAIN_TIMEOUT = 300.0
HTTP_TIMEOUT = 120.0
# The command line the written sections quote.
COMMAND = ".venv/bin/python -m benchmarks.concurrency.run --write docs/benchmarks.md"
REPLY = (
    "The tide pulls at the pilings as the lantern gutters, and for a moment the whole harbor "
    "holds its breath. Somewhere below the pier a bell answers yours, slow and patient. Old "
    "Maren sets down her net without a word and points toward the breakwater, where the fog "
    "thickens until the cliff lamps are only smudges of gold. When the bell sounds again it is "
    "closer, and under it you hear oars: careful, unhurried strokes, the rhythm of someone who "
    "knows exactly where the rocks lie."
)
ACTIONS = (
    "I ask Maren who rows at this hour",
    "I light the second lantern and hold it high",
    "I walk to the end of the pier and listen",
    "I search the ledger-house for the harbor log",
    "I call out to the boat in the fog",
    "I follow the rope down to the water",
    "I show Maren the brass key from my pocket",
)


class LogTap(logging.Handler):
    """Every WARNING or worse the server logs in this process, with its traceback text."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.messages: list[str] = []
        self.setFormatter(logging.Formatter("%(name)s: %(message)s"))

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(self.format(record))


def server_settings(data_dir: Path, endpoint_url: str) -> Settings:
    """As the test suite's ``endpoint_settings``, with a timeout that load cannot trip."""
    return load_settings(
        {
            "TALEKEEPER_DATA_DIR": str(data_dir),
            "TALEKEEPER_ENDPOINT_URL": endpoint_url,
            "TALEKEEPER_MODEL": "double-narrator",
            "TALEKEEPER_EMBEDDING_MODEL": "double-embed",
            "TALEKEEPER_SUMMARY_MODEL": "double-summary",
            "TALEKEEPER_TIMEOUT": "30",
        }
    )


@contextmanager
def live_server(data_dir: Path) -> Iterator[tuple[str, LogTap]]:
    """The real app on 127.0.0.1 (its own database and model double); yields (url, log tap)."""
    with ModelDouble(default_reply=REPLY) as double:
        app = create_app(server_settings(data_dir, double.url))
        with serving(app) as (url, _loop):
            # uvicorn set up its loggers (they do not propagate) with its config: tap them now
            tap = LogTap()
            loggers = [logging.getLogger(), logging.getLogger("uvicorn")]
            for logger in loggers:
                logger.addHandler(tap)
            try:
                yield url, tap
            finally:
                for logger in loggers:
                    logger.removeHandler(tap)


class Monitor(threading.Thread):
    """Polls ``GET /api/derived``: every failed background pass seen, with its error."""

    def __init__(self, url: str) -> None:
        super().__init__(daemon=True)
        self.url = url
        self.stop = threading.Event()
        self.failures: dict[tuple[int, str, str], str] = {}  # (adventure, kind, when) -> error
        self.poll_errors: list[str] = []

    def run(self) -> None:
        with httpx.Client(base_url=self.url, timeout=HTTP_TIMEOUT) as client:
            while not self.stop.is_set():
                self.safe_look(client)
                self.stop.wait(MONITOR_SECONDS)
            self.safe_look(client)

    def safe_look(self, client: httpx.Client) -> None:
        try:
            self.look(client)
        except Exception as exc:  # noqa: BLE001 -- a thread boundary: a failed poll is counted, not lost
            self.poll_errors.append(f"monitor: {type(exc).__name__}: {exc}")

    def look(self, client: httpx.Client) -> None:
        answer = client.get("/api/derived")
        if not answer.is_success:
            self.poll_errors.append(f"{answer.status_code}: {answer.text}")
            return
        for adventure in answer.json()["adventures"]:
            derived = adventure["derived"]
            for kind, view in derived.items():
                if not isinstance(view, dict) or view["last_failure_at"] is None:
                    continue
                error = view["last_error"] or view["previous_error"] or ""
                self.failures[(adventure["id"], kind, view["last_failure_at"])] = error


def idle(client: httpx.Client, adventure_ids: list[int]) -> bool:
    """Every kind idle (or failed) and no work pending, for every adventure."""
    for adventure_id in adventure_ids:
        derived = client.get(f"/api/adventures/{adventure_id}/derived").json()
        if derived["pending"]:
            return False
        if any(isinstance(v, dict) and v["state"] == "running" for v in derived.values()):
            return False
    return True


def wait_idle(client: httpx.Client, adventure_ids: list[int]) -> None:
    deadline = time.monotonic() + DRAIN_TIMEOUT
    while not idle(client, adventure_ids):
        if time.monotonic() > deadline:
            raise RuntimeError(f"background work still running after {DRAIN_TIMEOUT:.0f} s")
        time.sleep(0.05)


def create_adventures(client: httpx.Client, count: int) -> list[int]:
    """``count`` adventures from the first shipped scenario; their ids."""
    scenario = client.get("/api/scenarios").json()[0]["id"]
    ids = []
    for _ in range(count):
        answer = client.post("/api/adventures", json={"scenario": scenario})
        answer.raise_for_status()
        ids.append(int(answer.json()["id"]))
    return ids


def run_together(count: int, work: Callable[[int, threading.Barrier], None]) -> tuple[float, float]:
    """``work(i, start)`` for each of ``count`` clients, each in its own thread, and waits for
    them all. Each client calls ``start.wait()`` once it is ready to send its first request
    (its connection open), so none is timed while another is still getting ready. Returns
    the ``perf_counter`` stamps of the start (every client past the barrier) and of the end
    (the last thread finished)."""
    start = threading.Barrier(count + 1)
    threads = [threading.Thread(target=work, args=(i, start)) for i in range(count)]
    for thread in threads:
        thread.start()
    start.wait()
    began = time.perf_counter()
    for thread in threads:
        thread.join()
    return began, time.perf_counter()
