"""Concurrency on one server and one SQLite database, background work included: 8 players
playing turns, then 20 clients sending mixed traffic.

The real app (``talekeeper.web.app.create_app``) is served by uvicorn on loopback in this
process, on a fresh migrated SQLite file (WAL), with the loopback model double
(``tests/double/server.py``, a real OpenAI-compatible HTTP server) as narrator
(``double-narrator``, a fixed ~110-word reply at once), embedder (``double-embed``) and
summary model (``double-summary``, which writes memories and summaries deterministically), as
the test suite configures it.

Players: each is a thread with its own httpx client and its own adventure, created from a
shipped scenario through ``POST /api/adventures``; the players start together (a barrier)
and each plays ``--turns`` turns through ``POST /api/adventures/{id}/actions`` (JSON) back
to back, so the in-process memory worker (memories, summary, embeddings, eviction) runs on
the same database meanwhile. After the last turn the run waits until
``GET /api/adventures/{id}/derived`` shows every kind idle and nothing pending, and that
wait is counted in the wall time "with background work". A single player playing the same
number of turns on its own fresh server is the baseline.

Mixed traffic: ``--clients`` clients (20), each with its own adventure (a scenario, one
turn played) and connection, each sending ``MIX`` shuffled with a fixed seed: turns as JSON
and as server-sent events, adventures created and edited, story cards created and edited,
actions edited, undo then redo, pages of the story read; ``IMPORTERS`` of them also
import, once, an adventure file of ``--import-actions`` actions (an export of a real
adventure whose story is replaced).
Reported per kind: requests, p50/p95/max latency, 5xx answers (503 included), "locked"
answers and other failures; and the imported adventures' lengths, so an import that did not
happen shows.

Counted as failures: every non-2xx answer (its body kept), a stream that does not end with
its ``reply`` event; every background pass that failed (a monitor polls ``GET
/api/derived`` every ``MONITOR_SECONDS`` and counts distinct ``last_failure_at`` stamps, so
two failures of one kind between two polls count once); every AI call logged with status
"error" (``GET /api/ai-calls``, the players' run); and every WARNING or worse the server
logs in this process. "database is locked" failures are those of these whose text says
so, or ``database_busy`` (the error texts only, never the story, whose scenarios mention
locked doors); one incident can show in several of these (a 500 and its log record), so
these are counts of evidence, not of incidents. The detector was checked on the code from
before write transactions took the lock first, with imports of 20,000 actions held in one
transaction: it reported the 500s, the reset connections and the logged tracebacks.

    .venv/bin/python benchmarks/concurrency.py [--turns N] [--players 8] [--clients 20]
        [--ops 50] [--import-actions 3000] [--only players|mixed] [--short]
        [--write docs/benchmarks.md]

Target: 0 "database is locked" failures, 0 server errors (503 included: at this load a busy
database must be waited for, not refused) and no other failure.

The model double is imported from ``tests/`` (the repository root is put on ``sys.path``
when the script is run by path), as ``benchmarks/recall`` does.
"""

from __future__ import annotations

import argparse
import importlib
import json
import logging
import os
import random
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from talekeeper.core.reports import machine_description, pyplot, write_section
from talekeeper.settings import Settings, load_settings
from talekeeper.web.app import create_app

ROOT = Path(__file__).resolve().parents[1]
PLAYERS = 8
TURNS = 150  # 300 actions per adventure: about 1.5 minutes in all on 2 cores
MONITOR_SECONDS = 0.25
DRAIN_TIMEOUT = 300.0
HTTP_TIMEOUT = 120.0
PLOT = "concurrency.png"
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


def from_tests(module: str, name: str) -> Any:
    """``name`` from a module of ``tests/``, importable when the script runs by path too.
    Imported by name, so type-checking this script does not check the test helpers."""
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    return getattr(importlib.import_module(module), name)


def model_double_class() -> Any:
    """``tests.double.server.ModelDouble``."""
    return from_tests("tests.double.server", "ModelDouble")


def serving(app: Any) -> Any:
    """``tests.live_server.serving``: the app on loopback in a thread, yielding (url, loop)."""
    return from_tests("tests.live_server", "serving")(app)


# -- the server ----------------------------------------------------------------------------


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
    with model_double_class()(default_reply=REPLY) as double:
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


# -- the players ---------------------------------------------------------------------------


@dataclass
class Turn:
    started: float  # perf_counter
    latency_ms: float
    status: int  # 0: no answer (a transport error)
    error: str | None


def play(url: str, adventure_id: int, turns: int, start: threading.Barrier) -> list[Turn]:
    """One player: ``turns`` turns back to back on its own adventure and connection."""
    out: list[Turn] = []
    with httpx.Client(base_url=url, timeout=HTTP_TIMEOUT) as client:
        start.wait()
        for i in range(turns):
            body = {"type": "do", "text": f"{ACTIONS[i % len(ACTIONS)]} (turn {i + 1})"}
            began = time.perf_counter()
            try:
                answer = client.post(f"/api/adventures/{adventure_id}/actions", json=body)
                status, error = answer.status_code, None
                if not answer.is_success:
                    error = answer.text
            except httpx.HTTPError as exc:
                status, error = 0, f"{type(exc).__name__}: {exc}"
            out.append(Turn(began, (time.perf_counter() - began) * 1000, status, error))
    return out


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


# -- one round -----------------------------------------------------------------------------


@dataclass
class Round:
    players: int
    turns: list[Turn] = field(default_factory=list)
    play_s: float = 0.0  # first turn sent to last answer
    drain_s: float = 0.0  # last answer to background work idle
    failed_passes: dict[tuple[int, str, str], str] = field(default_factory=dict)
    call_errors: list[str] = field(default_factory=list)
    calls: int = 0
    logged: list[str] = field(default_factory=list)
    memories: int = 0
    embedded: int = 0
    summaries: int = 0  # summary versions written

    @property
    def bad(self) -> list[Turn]:
        return [t for t in self.turns if not 200 <= t.status < 300]

    def latency(self, q: float) -> float:
        ordered = sorted(t.latency_ms for t in self.turns)
        return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]

    def locked(self) -> int:
        texts = [t.error or "" for t in self.bad]
        texts += list(self.failed_passes.values()) + self.call_errors + self.logged
        return sum("locked" in text.lower() for text in texts)

    def failures(self) -> int:
        return len(self.bad) + len(self.failed_passes) + len(self.call_errors) + len(self.logged)


def create_adventures(client: httpx.Client, players: int) -> list[int]:
    scenario = client.get("/api/scenarios").json()[0]["id"]
    ids = []
    for _ in range(players):
        answer = client.post("/api/adventures", json={"scenario": scenario})
        answer.raise_for_status()
        ids.append(int(answer.json()["id"]))
    return ids


def run_round(players: int, turns: int, data_dir: Path) -> Round:
    """A fresh server and database; ``players`` players at once; then the background drain."""
    result = Round(players)
    with live_server(data_dir) as (url, tap), httpx.Client(base_url=url, timeout=60) as client:
        ids = create_adventures(client, players)
        wait_idle(client, ids)
        monitor = Monitor(url)
        monitor.start()
        start = threading.Barrier(players + 1)
        outcomes: list[list[Turn]] = [[] for _ in ids]

        def player(i: int) -> None:
            outcomes[i] = play(url, ids[i], turns, start)

        threads = [threading.Thread(target=player, args=(i,)) for i in range(players)]
        for thread in threads:
            thread.start()
        start.wait()
        began = time.perf_counter()
        for thread in threads:
            thread.join()
        played = time.perf_counter()
        wait_idle(client, ids)
        result.drain_s = time.perf_counter() - played
        result.play_s = played - began
        monitor.stop.set()
        monitor.join()
        result.turns = [t for turns_of in outcomes for t in turns_of]
        result.failed_passes = dict(monitor.failures)
        result.logged = list(tap.messages) + monitor.poll_errors
        count_products(client, ids, result)
    return result


def count_products(client: httpx.Client, ids: list[int], result: Round) -> None:
    """Memories written, summaries present, and the AI call log's errors."""
    for adventure_id in ids:
        memories = client.get(f"/api/adventures/{adventure_id}/memories?include=all").json()
        result.memories += len(memories)
        result.embedded += sum(1 for m in memories if m["embedded"])
        summary = client.get(f"/api/adventures/{adventure_id}/summary").json()
        result.summaries += len(summary["versions"])
    before: int | None = None
    while True:
        params: dict[str, Any] = {"limit": 500}
        if before is not None:
            params["before"] = before
        page = client.get("/api/ai-calls", params=params).json()
        if not page:
            return
        result.calls += len(page)
        result.call_errors += [f"{c['kind']}: {c['error']}" for c in page if c["status"] != "ok"]
        before = min(c["id"] for c in page)


# -- the report ----------------------------------------------------------------------------


def table(rounds: list[Round]) -> list[str]:
    lines = [
        "| players | turns | turns/s | turns/s with background | p50 | p95 | max "
        "| non-2xx | locked | failed passes | AI call errors | warnings logged "
        "| memories (embedded) | summaries | drain |",
        "|---:|" + "---:|" * 14,
    ]
    for r in rounds:
        n = len(r.turns)
        lines.append(
            f"| {r.players} | {n} | {n / r.play_s:.1f} | {n / (r.play_s + r.drain_s):.1f} "
            f"| {r.latency(0.5):.0f} ms | {r.latency(0.95):.0f} ms | {r.latency(1.0):.0f} ms "
            f"| {len(r.bad)} | {r.locked()} | {len(r.failed_passes)} | {len(r.call_errors)} "
            f"| {len(r.logged)} | {r.memories} ({r.embedded}) | {r.summaries} "
            f"| {r.drain_s:.1f} s |"
        )
    return lines


def evidence(rounds: list[Round]) -> list[str]:
    """The first few failure texts of each round, so a failure can be traced."""
    lines: list[str] = []
    for r in rounds:
        texts = [f"HTTP {t.status}: {t.error}" for t in r.bad]
        texts += [
            f"{kind} pass (adventure {a}): {e}" for (a, kind, _), e in r.failed_passes.items()
        ]
        texts += [f"AI call {e}" for e in r.call_errors] + [f"log: {m}" for m in r.logged]
        for text in texts[:5]:
            lines.append(f"- {r.players} player(s): `{text[:300].replace('`', chr(39))}`")
        if len(texts) > 5:
            lines.append(f"- {r.players} player(s): … and {len(texts) - 5} more")
    return lines


def markdown(rounds: list[Round], run: dict[str, Any]) -> str:
    many = rounds[-1]
    lines = [
        f"{many.players} players on one server and one SQLite database (WAL), each with its "
        f"own adventure from a shipped scenario, each playing {run['turns']} turns back to "
        "back through `POST /api/adventures/{id}/actions` (JSON) on its own connection, all "
        "starting together; the real app served by uvicorn on loopback, the loopback model "
        "double (a real OpenAI-compatible HTTP server answering at once) as narrator, "
        "embedder and summary model, so the in-process memory worker writes memories (from "
        "the 12th action), summaries (every 15) and embeddings on the same database while the "
        "turns run. The run waits for the background work to finish (every kind idle, nothing "
        'pending) and counts that wait in "turns/s with background" and "drain". '
        "Failures counted: non-2xx answers, failed background passes (`/api/derived`, polled "
        f"every {MONITOR_SECONDS:g} s), AI calls logged as errors, warnings the server "
        'logged; "locked" counts those whose error text says "database is locked". '
        "The first row is one player alone on a fresh server, the same number of turns. "
        f"Latency is the client's, per turn. On {run['machine']}, load average "
        f"{run['load'][0]:.1f} before and {run['load'][1]:.1f} after "
        "(`.venv/bin/python benchmarks/concurrency.py --write docs/benchmarks.md`).",
        "",
        *table(rounds),
        "",
    ]
    if run.get("plot"):
        lines += [f"![Turn latency, 1 vs {many.players} players]({run['plot']})", ""]
    locked = sum(r.locked() for r in rounds)
    failures = sum(r.failures() for r in rounds)
    verdict = "met" if locked == 0 else "missed"
    lines.append(
        f'Target (0 "database is locked" failures): **{verdict}** ({locked} locked, '
        f"{failures} failures of any kind)."
    )
    if failures:
        lines += ["", "Failures seen:", "", *evidence(rounds)]
    return "\n".join(lines)


def plot(rounds: list[Round], path: Path) -> None:
    plt = pyplot()
    labels = ("p50", "p95", "max")
    quantiles = (0.5, 0.95, 1.0)
    fig, ax = plt.subplots(figsize=(7, 3.8))
    width = 0.8 / len(rounds)
    for i, r in enumerate(rounds):
        xs = [x + (i - (len(rounds) - 1) / 2) * width for x in range(len(labels))]
        bars = ax.bar(xs, [r.latency(q) for q in quantiles], width, label=f"{r.players}")
        ax.bar_label(bars, fmt="%.0f", fontsize=8)
    ax.set_xticks(range(len(labels)), labels)
    ax.set_ylabel("turn latency (ms)")
    ax.set_title("Turn latency over HTTP, zero-latency model")
    ax.legend(title="players", fontsize=8)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)


# -- mixed traffic ---------------------------------------------------------------------------

CLIENTS = 20
MIXED_OPS = 50  # steps per client (an undo and its redo are one step, two requests)
IMPORT_ACTIONS = 3000  # actions in the imported adventure file
IMPORTERS = 10  # clients that import the file once each, among their other requests
# Each client's mix, per MIXED_OPS requests (imports come on top); shuffled with a fixed seed.
MIX = {
    "turn (JSON)": 10,
    "turn (stream)": 10,
    "create adventure": 4,
    "edit adventure": 5,
    "create card": 4,
    "edit card": 4,
    "edit action": 5,
    "undo": 4,  # each followed by its redo
    "read story": 5,  # a page of the story: reads never wait for the writers
}
SHORT = {"ops": 15, "actions": 1000, "importers": 4, "turns": 20}


@dataclass
class Op:
    kind: str
    latency_ms: float
    status: int  # 0: no answer (a transport error); for a stream, 599 when it ended badly
    error: str | None


@dataclass
class Client:
    """One client's adventure and the rows its edits aim at."""

    adventure: int
    card: int
    action: int


def import_file(base: dict[str, Any], actions: int) -> bytes:
    """An export of a real adventure, its story replaced by ``actions`` alternating player
    actions and replies on the main branch (the format's own fields, nothing else)."""
    data = json.loads(json.dumps(base))
    stamp = base["actions"][0]["created_at"]
    data["actions"] = [
        {
            "key": i + 1,
            "branch": 1,
            "depth": i,
            "type": "narration" if i % 2 == 0 else "do",
            "text": REPLY if i % 2 == 0 else f"{ACTIONS[i % len(ACTIONS)]} ({i})",
            "state": "active",
            "take": 1,
            "created_at": stamp,
            "edited_at": None,
        }
        for i in range(actions)
    ]
    data["branches"] = [b for b in data["branches"] if b["key"] == 1]
    data["adventure"]["current_branch"] = 1
    data["adventure"]["title"] = f"Imported, {actions} actions"
    for section in ("insights", "memories", "summaries"):
        data[section] = []
    return json.dumps(data).encode()


def timed(kind: str, send: Any) -> tuple[Op, Any]:
    """Run one request; its answer as an ``Op`` and the parsed body (``None`` on failure)."""
    began = time.perf_counter()
    try:
        status, body, error = send()
    except httpx.HTTPError as exc:
        status, body, error = 0, None, f"{type(exc).__name__}: {exc}"
    return Op(kind, (time.perf_counter() - began) * 1000, status, error), body


def plain(answer: httpx.Response) -> tuple[int, Any, str | None]:
    if answer.is_success:
        return answer.status_code, answer.json(), None
    return answer.status_code, None, answer.text


def streamed_turn(client: httpx.Client, adventure: int, text: str) -> tuple[int, Any, str | None]:
    """A streamed turn: a success only when the stream ends with its ``reply`` event."""
    with client.stream(
        "POST",
        f"/api/adventures/{adventure}/actions",
        json={"type": "do", "text": text},
        headers={"Accept": "text/event-stream"},
    ) as answer:
        if not answer.is_success:
            answer.read()
            return answer.status_code, None, answer.text
        events: list[tuple[str, str]] = []
        name = ""
        for line in answer.iter_lines():
            if line.startswith("event:"):
                name = line[6:].strip()
            elif line.startswith("data:"):
                events.append((name, line[5:].strip()))
    if events and events[-1][0] == "reply":
        return 200, json.loads(events[-1][1]), None
    last = events[-1] if events else ("nothing", "")
    return 599, None, f"stream ended with {last[0]}: {last[1]}"


def operation(client: httpx.Client, me: Client, kind: str, n: int, upload: bytes) -> list[Op]:
    """One step of a client's mix (two requests for an undo and its redo)."""
    a = me.adventure
    text = f"{ACTIONS[n % len(ACTIONS)]} (step {n})"
    sends: dict[str, Any] = {
        "turn (JSON)": lambda: plain(
            client.post(f"/api/adventures/{a}/actions", json={"type": "do", "text": text})
        ),
        "turn (stream)": lambda: streamed_turn(client, a, text),
        "create adventure": lambda: plain(client.post("/api/adventures", json={"title": text})),
        "edit adventure": lambda: plain(
            client.patch(f"/api/adventures/{a}", json={"authors_note": f"Mood {n}: fog."})
        ),
        "create card": lambda: plain(
            client.post(f"/api/adventures/{a}/cards", json={"name": f"Buoy {n}", "entry": text})
        ),
        "edit card": lambda: plain(client.patch(f"/api/cards/{me.card}", json={"notes": text})),
        "edit action": lambda: plain(
            client.patch(f"/api/actions/{me.action}", json={"text": text})
        ),
        "undo": lambda: plain(client.post(f"/api/adventures/{a}/undo")),
        "read story": lambda: plain(client.get(f"/api/adventures/{a}/actions")),
        "import": lambda: plain(
            client.post(
                "/api/adventures/import",
                content=upload,
                headers={"Content-Type": "application/json"},
            )
        ),
    }
    op, body = timed(kind, sends[kind])
    ops = [op]
    if kind.startswith("turn") and body is not None:
        me.action = int(body["action"]["id"])
    if kind == "undo" and body is not None:
        redo, _ = timed("redo", lambda: plain(client.post(f"/api/adventures/{a}/redo")))
        ops.append(redo)
    return ops


def schedule(seed: int, ops: int, imports: bool) -> list[str]:
    scale = ops / sum(MIX.values())
    plan = [kind for kind, count in MIX.items() for _ in range(max(1, round(count * scale)))]
    if imports:
        plan.append("import")
    random.Random(seed).shuffle(plan)
    return plan


def prepare(client: httpx.Client, clients: int) -> list[Client]:
    """Each client's adventure (a shipped scenario, one turn played), card and action."""
    out = []
    for adventure in create_adventures(client, clients):
        card = client.get(f"/api/adventures/{adventure}/cards").json()[0]["id"]
        turn = client.post(f"/api/adventures/{adventure}/actions", json={"text": ACTIONS[0]})
        turn.raise_for_status()
        out.append(Client(adventure, int(card), int(turn.json()["action"]["id"])))
    return out


@dataclass
class Mixed:
    clients: int
    import_actions: int
    import_bytes: int = 0
    ops: list[Op] = field(default_factory=list)
    wall_s: float = 0.0
    drain_s: float = 0.0
    failed_passes: dict[tuple[int, str, str], str] = field(default_factory=dict)
    logged: list[str] = field(default_factory=list)
    imported: list[int] = field(default_factory=list)  # each imported adventure's length

    def of(self, kind: str) -> list[Op]:
        return [o for o in self.ops if o.kind == kind]

    def bad(self, ops: list[Op] | None = None) -> list[Op]:
        return [o for o in (self.ops if ops is None else ops) if not 200 <= o.status < 300]

    def locked(self, ops: list[Op] | None = None) -> int:
        texts = [o.error or "" for o in self.bad(ops)]
        if ops is None:
            texts += list(self.failed_passes.values()) + self.logged
        return sum("database is locked" in t.lower() or "database_busy" in t for t in texts)


def run_mixed(clients: int, ops: int, actions: int, importers: int, data_dir: Path) -> Mixed:
    result = Mixed(clients, actions)
    with live_server(data_dir) as (url, tap), httpx.Client(base_url=url, timeout=60) as client:
        mine = prepare(client, clients)
        base = client.get(f"/api/adventures/{mine[0].adventure}/export").json()
        upload = import_file(base, actions)
        result.import_bytes = len(upload)
        wait_idle(client, [m.adventure for m in mine])
        monitor = Monitor(url)
        monitor.start()
        start = threading.Barrier(clients + 1)
        outcomes: list[list[Op]] = [[] for _ in mine]

        def run_client(i: int) -> None:
            plan = schedule(i, ops, i < importers)
            with httpx.Client(base_url=url, timeout=HTTP_TIMEOUT) as own:
                start.wait()
                for n, kind in enumerate(plan):
                    outcomes[i] += operation(own, mine[i], kind, n, upload)

        threads = [threading.Thread(target=run_client, args=(i,)) for i in range(clients)]
        for thread in threads:
            thread.start()
        start.wait()
        began = time.perf_counter()
        for thread in threads:
            thread.join()
        result.wall_s = time.perf_counter() - began
        listing = client.get("/api/adventures").json()
        result.imported = [a["length"] for a in listing if a["title"].startswith("Imported")]
        wait_idle(client, [a["id"] for a in listing])
        result.drain_s = time.perf_counter() - began - result.wall_s
        monitor.stop.set()
        monitor.join()
        result.ops = [o for ops_of in outcomes for o in ops_of]
        result.failed_passes = dict(monitor.failures)
        result.logged = list(tap.messages) + monitor.poll_errors
    return result


def mixed_table(m: Mixed) -> list[str]:
    lines = [
        "| kind | requests | p50 | p95 | max | 5xx (503 included) | locked | other failures |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    kinds = [*MIX, "redo", "import"]
    for kind in [*kinds, "all"]:
        ops = m.ops if kind == "all" else m.of(kind)
        if not ops:
            continue
        ms = sorted(o.latency_ms for o in ops)

        def q(p: float, ms: list[float] = ms) -> str:
            return f"{ms[min(len(ms) - 1, round(p * (len(ms) - 1)))]:.0f} ms"

        server = sum(1 for o in ops if o.status >= 500)
        other = len(m.bad(ops)) - server
        name = f"**{kind}**" if kind == "all" else kind
        lines.append(
            f"| {name} | {len(ops)} | {q(0.5)} | {q(0.95)} | {q(1.0)} | {server} "
            f"| {m.locked(ops)} | {other} |"
        )
    return lines


def mixed_markdown(m: Mixed, run: dict[str, Any]) -> str:
    server = sum(1 for o in m.ops if o.status >= 500)
    failures = len(m.bad()) + len(m.failed_passes) + len(m.logged)
    verdict = "met" if failures == 0 else "missed"
    lines = [
        f"{m.clients} clients at once on one server and one SQLite database (WAL), each on its "
        "own connection sending its own shuffled mix back to back: turns as JSON and as "
        "server-sent events, adventures created, adventures edited (`PATCH`), story cards "
        "created and edited, actions edited, undo each followed by redo, pages of the story "
        "read; "
        f"{run['importers']} of them also import an adventure file of "
        f"{m.import_actions:,} actions ({m.import_bytes / 1e6:.1f} MB) once. The real app on "
        "uvicorn on loopback, the loopback model double as narrator, embedder and summary "
        "model, the in-process memory worker writing memories, summaries and embeddings "
        "meanwhile (the imported stories included). A streamed turn counts as a success only "
        'when its stream ends with the `reply` event. "locked" counts answers whose error '
        'says "database is locked" or `database_busy`; other failures are 4xx answers, '
        "broken streams and transport errors; failed background passes and warnings the "
        f"server logged are counted below. {len(m.ops)} requests in {m.wall_s:.1f} s, then "
        f"{m.drain_s:.1f} s until the background work was idle. On {run['machine']}, load "
        f"average {run['load'][0]:.1f} before and {run['load'][1]:.1f} after "
        "(`.venv/bin/python benchmarks/concurrency.py --write docs/benchmarks.md`).",
        "",
        *mixed_table(m),
        "",
        f"Imported adventures: {len(m.imported)}, of {sorted(set(m.imported))} actions. "
        f"Failed background passes: {len(m.failed_passes)}; warnings logged: {len(m.logged)}.",
        "",
        f'Target (0 server errors, 0 "database is locked", no failure of any kind): '
        f"**{verdict}** ({server} 5xx, {m.locked()} locked, {failures} failures in all).",
    ]
    if failures:
        texts = [f"{o.kind}: HTTP {o.status}: {o.error}" for o in m.bad()]
        texts += [f"{k} pass (adventure {a}): {e}" for (a, k, _), e in m.failed_passes.items()]
        texts += [f"log: {t}" for t in m.logged]
        lines += ["", "Failures seen:", ""]
        lines += [f"- `{t[:300].replace('`', chr(39))}`" for t in texts[:8]]
        if len(texts) > 8:
            lines.append(f"- … and {len(texts) - 8} more")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--write", type=Path, help="store the sections in this Markdown file")
    parser.add_argument("--turns", type=int, default=TURNS, help="turns per player")
    parser.add_argument("--players", type=int, default=PLAYERS)
    parser.add_argument("--clients", type=int, default=CLIENTS, help="clients of the mixed run")
    parser.add_argument("--ops", type=int, default=MIXED_OPS, help="requests per mixed client")
    parser.add_argument(
        "--import-actions", type=int, default=IMPORT_ACTIONS, help="actions in the imported file"
    )
    parser.add_argument("--only", choices=("players", "mixed"), help="run one of the two")
    parser.add_argument("--short", action="store_true", help="a quick run, for development")
    args = parser.parse_args(argv)
    ok = True
    if args.only != "mixed":
        ok = players_run(args) and ok
    if args.only != "players":
        ok = mixed_run(args) and ok
    return 0 if ok else 1


def players_run(args: argparse.Namespace) -> bool:
    turns = SHORT["turns"] if args.short else args.turns
    load_before = os.getloadavg()[0]
    rounds: list[Round] = []
    with tempfile.TemporaryDirectory(prefix="talekeeper-concurrency-") as root:
        for players in sorted({1, args.players}):
            print(f"{players} player(s), {turns} turns each …", file=sys.stderr)
            rounds.append(run_round(players, turns, Path(root) / str(players)))
    run: dict[str, Any] = {
        "turns": turns,
        "machine": machine_description(),
        "load": (load_before, os.getloadavg()[0]),
    }
    if args.write:
        image = args.write.parent / args.write.stem / PLOT
        plot(rounds, image)
        run["plot"] = image.relative_to(args.write.parent).as_posix()
    body = markdown(rounds, run)
    print(body)
    if args.write:
        write_section(args.write, "concurrency", "Concurrency (one SQLite server)", body)
        print(f"\nWritten to {args.write}.", file=sys.stderr)
    return all(r.locked() == 0 for r in rounds)


def mixed_run(args: argparse.Namespace) -> bool:
    ops = SHORT["ops"] if args.short else args.ops
    actions = SHORT["actions"] if args.short else args.import_actions
    importers = min(args.clients, SHORT["importers"] if args.short else IMPORTERS)
    print(f"mixed traffic: {args.clients} clients, {ops} requests each …", file=sys.stderr)
    load_before = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="talekeeper-mixed-") as root:
        result = run_mixed(args.clients, ops, actions, importers, Path(root))
    run = {
        "importers": importers,
        "machine": machine_description(),
        "load": (load_before, os.getloadavg()[0]),
    }
    body = mixed_markdown(result, run)
    print(body)
    if args.write:
        write_section(args.write, "concurrency-mixed", "Mixed traffic (one SQLite server)", body)
        print(f"\nWritten to {args.write}.", file=sys.stderr)
    return not result.bad() and not result.failed_passes and not result.logged


if __name__ == "__main__":
    raise SystemExit(main())
