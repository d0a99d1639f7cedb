"""N players over HTTP (the concurrency and scale-out runs).

A ``Player`` is a client of the app: its adventure, its session cookie when accounts are on,
and every request it sent, timed (``Sent``; status 0: no answer). ``run_together`` gives
each player a thread and a client, and starts the clock once all are ready. ``wait_idle``
waits until every adventure's background work is idle (or failed) with nothing pending.

``live_server``: the real app on loopback in this process, on a fresh SQLite file, with the
loopback model double as narrator (``REPLY`` at once), embedder and summary model.
``play_round`` plays there and gathers the evidence of failure: non-2xx answers, every
WARNING or worse logged in this process and every failed background pass (``Monitor``: the
distinct ``last_failure_at`` stamps of ``GET /api/derived``). ``locked`` reads error texts
only, never the story (whose scenarios mention locked doors).
"""

from __future__ import annotations

import logging
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from logging.handlers import BufferingHandler
from pathlib import Path
from typing import TypeVar

import httpx

from talekeeper.settings import load_settings
from talekeeper.web.app import create_app
from talekeeper_testkit.double import ModelDouble
from talekeeper_testkit.live import serving

MONITOR_SECONDS = 0.25
DRAIN_TIMEOUT = 600.0
HTTP_TIMEOUT = 120.0
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


def double_settings(endpoint_url: str) -> dict[str, str]:
    """The model double as narrator, embedder and summary model, as the test suite has it."""
    return {
        "TALEKEEPER_ENDPOINT_URL": endpoint_url,
        "TALEKEEPER_MODEL": "double-narrator",
        "TALEKEEPER_SUMMARY_MODEL": "double-summary",
        "TALEKEEPER_EMBEDDING_MODEL": "double-embed",
    }


def action_text(n: int) -> str:
    """A player's ``n``-th action (from 0): unique per player, so it can be found again."""
    return f"{ACTIONS[n % len(ACTIONS)]} (turn {n + 1})"


def quantile(values: Iterable[float], q: float) -> float:
    """The ``q`` quantile (nearest rank) of ``values``; 0 when there are none."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))] if ordered else 0.0


def locked(texts: Iterable[str]) -> int:
    return sum("database is locked" in t.lower() or "database_busy" in t for t in texts)


@dataclass
class Sent:
    """One request; ``at``: ``perf_counter`` when sent; ``error``: unless answered 2xx."""

    kind: str
    at: float
    latency_ms: float
    status: int
    error: str = ""

    @property
    def ok(self) -> bool:
        return 200 <= self.status < 300

    @property
    def ended(self) -> float:
        return self.at + self.latency_ms / 1000


@dataclass
class Player:
    adventure: int = 0
    cookie: str = ""  # the session, when accounts are on
    sent: list[Sent] = field(default_factory=list)

    def headers(self) -> dict[str, str]:
        return {"Cookie": f"tk_session={self.cookie}"} if self.cookie else {}

    def send(self, kind: str, request: Callable[[], httpx.Response]) -> httpx.Response | None:
        """``request()``, timed and kept; its answer, or ``None`` when none came."""
        began = time.perf_counter()
        answer: httpx.Response | None = None
        try:
            answer = request()
            status, error = answer.status_code, "" if answer.is_success else answer.text
        except httpx.HTTPError as exc:
            status, error = 0, f"{type(exc).__name__}: {exc}"
        self.sent.append(Sent(kind, began, (time.perf_counter() - began) * 1000, status, error))
        return answer

    def turn(
        self, client: httpx.Client, text: str, url: str = "", kind: str = "turn", sse: bool = False
    ) -> httpx.Response | None:
        """``POST /api/adventures/{id}/actions`` (JSON, or server-sent events read to the end)."""
        return self.send(
            kind,
            lambda: client.post(
                f"{url}/api/adventures/{self.adventure}/actions",
                json={"type": "do", "text": text},
                headers=self.headers() | ({"Accept": "text/event-stream"} if sse else {}),
            ),
        )


P = TypeVar("P", bound=Player)


def run_together(
    players: Sequence[P], work: Callable[[httpx.Client, P], None], url: str = ""
) -> tuple[float, float]:
    """``work(client, player)`` for every player at once, each in a thread with its own client
    (on ``url``); the ``perf_counter`` stamps of the start (all ready) and of the end."""
    start = threading.Barrier(len(players) + 1)

    def one(player: P) -> None:
        with httpx.Client(base_url=url, timeout=HTTP_TIMEOUT) as client:
            start.wait()
            work(client, player)

    threads = [threading.Thread(target=one, args=(p,)) for p in players]
    for thread in threads:
        thread.start()
    start.wait()
    began = time.perf_counter()
    for thread in threads:
        thread.join()
    return began, time.perf_counter()


def idle(client: httpx.Client, player: Player) -> bool:
    view = client.get(f"/api/adventures/{player.adventure}/derived", headers=player.headers())
    derived = view.raise_for_status().json()
    running = any(isinstance(v, dict) and v["state"] == "running" for v in derived.values())
    return not derived["pending"] and not running


def wait_idle(client: httpx.Client, players: Sequence[Player], pause: float = 0.05) -> float:
    """Seconds until the background work of every player's adventure was idle."""
    began = time.perf_counter()
    while not all(idle(client, p) for p in players):
        if time.perf_counter() - began > DRAIN_TIMEOUT:
            raise RuntimeError(f"background work still running after {DRAIN_TIMEOUT:.0f} s")
        time.sleep(pause)
    return time.perf_counter() - began


@contextmanager
def live_server(data_dir: Path) -> Iterator[tuple[str, BufferingHandler]]:
    """The app on 127.0.0.1; its URL, and every WARNING or worse logged meanwhile."""
    with ModelDouble(default_reply=REPLY) as double:
        settings = double_settings(double.url) | {"TALEKEEPER_DATA_DIR": str(data_dir)}
        settings["TALEKEEPER_TIMEOUT"] = "30"  # one that load cannot trip
        with serving(create_app(load_settings(settings))) as (url, _loop):
            # uvicorn set up its loggers (they do not propagate) with its config: tap them now
            tap = BufferingHandler(sys.maxsize)
            tap.setLevel(logging.WARNING)
            tap.setFormatter(logging.Formatter("%(name)s: %(message)s"))
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
        self.url, self.stop = url, threading.Event()
        self.failures: dict[tuple[int, str, str], str] = {}  # (adventure, kind, when) -> error
        self.poll_errors: list[str] = []

    def run(self) -> None:
        with httpx.Client(base_url=self.url, timeout=HTTP_TIMEOUT) as client:
            while True:
                try:
                    self.look(client)
                except Exception as exc:  # noqa: BLE001 -- a thread boundary: counted, not lost
                    self.poll_errors.append(f"monitor: {type(exc).__name__}: {exc}")
                if self.stop.is_set():
                    return
                self.stop.wait(MONITOR_SECONDS)

    def look(self, client: httpx.Client) -> None:
        for adventure in client.get("/api/derived").raise_for_status().json()["adventures"]:
            for kind, view in adventure["derived"].items():
                if isinstance(view, dict) and view["last_failure_at"] is not None:
                    error = view["last_error"] or view["previous_error"] or ""
                    self.failures[(adventure["id"], kind, view["last_failure_at"])] = error


def create_adventures(client: httpx.Client, count: int) -> list[int]:
    """``count`` adventures from the first shipped scenario; their ids."""
    scenario = client.get("/api/scenarios").json()[0]["id"]
    made = [client.post("/api/adventures", json={"scenario": scenario}) for _ in range(count)]
    return [int(answer.raise_for_status().json()["id"]) for answer in made]


@dataclass
class Round:
    """Players at once: what they sent, how long it took, and the evidence of failure."""

    players: Sequence[Player]
    play_s: float  # first request sent to last answer
    drain_s: float  # last answer to background work idle
    failed_passes: dict[tuple[int, str, str], str] = field(default_factory=dict)
    logged: list[str] = field(default_factory=list)  # by the server, and failed polls

    @property
    def sent(self) -> list[Sent]:
        return [s for p in self.players for s in p.sent]

    def bad(self) -> list[Sent]:
        return [s for s in self.sent if not s.ok]

    def failures(self) -> list[str]:
        """Every failure's text: non-2xx answers, failed passes, logged warnings."""
        texts = [f"{s.kind}: HTTP {s.status}: {s.error}" for s in self.bad()]
        texts += [f"{k} pass (adventure {a}): {e}" for (a, k, _), e in self.failed_passes.items()]
        return texts + [f"log: {m}" for m in self.logged]


def play_round(
    url: str, tap: BufferingHandler, players: Sequence[P], work: Callable[[httpx.Client, P], None]
) -> Round:
    """Once the background work is idle, ``work`` for every player at once, then the wait
    until it is idle again (every adventure's, those made while playing included)."""
    with httpx.Client(base_url=url, timeout=HTTP_TIMEOUT) as client:

        def everyone() -> list[Player]:
            return [Player(a["id"]) for a in client.get("/api/adventures").json()]

        wait_idle(client, everyone())
        monitor = Monitor(url)
        monitor.start()
        began, ended = run_together(players, work, url)
        drain_s = wait_idle(client, everyone())
        monitor.stop.set()
        monitor.join()
    logged = [tap.format(record) for record in tap.buffer] + monitor.poll_errors
    return Round(players, ended - began, drain_s, dict(monitor.failures), logged)


def failures_seen(texts: list[str], limit: int, prefix: str = "") -> list[str]:
    """The first ``limit`` failure texts as Markdown items, so a failure can be traced."""
    lines = [f"- {prefix}`{t[:300].replace('`', chr(39))}`" for t in texts[:limit]]
    if len(texts) > limit:
        lines.append(f"- {prefix}… and {len(texts) - limit} more")
    return lines
