"""The players run: ``PLAYERS`` players at once on one server, and one player alone.

Each player is a thread with its own httpx client and its own adventure, created from a
shipped scenario through ``POST /api/adventures``; the players start together and each
plays its turns through ``POST /api/adventures/{id}/actions`` (JSON) back to back, so the
in-process memory worker (memories, summary, embeddings, eviction) runs on the same
database meanwhile. After the last turn the round waits until every adventure's background
work is idle (``harness.wait_idle``), and that wait is counted in the wall time "with
background work". A single player playing the same number of turns on its own fresh server
is the baseline.

Counted as failures: every non-2xx answer (its body kept), every failed background pass the
monitor saw, every AI call logged with status "error" (``GET /api/ai-calls``) and every
WARNING or worse the server logged; "locked" counts those whose text says "database is
locked" (the error texts only, never the story, whose scenarios mention locked doors). One
incident can show in several of these (a 500 and its log record): they are counts of
evidence, not of incidents.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
from benchmarks.concurrency.harness import (
    ACTIONS,
    COMMAND,
    HTTP_TIMEOUT,
    MONITOR_SECONDS,
    Monitor,
    create_adventures,
    live_server,
    run_together,
    wait_idle,
)

from benchmarks.kit.report import pyplot

PLAYERS = 8
TURNS = 150  # 300 actions per adventure: about 1.5 minutes in all on 2 cores
SHORT_TURNS = 20  # --short
PLOT = "concurrency.png"


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


def run_round(players: int, turns: int, data_dir: Path) -> Round:
    """A fresh server and database; ``players`` players at once; then the background drain."""
    result = Round(players)
    with live_server(data_dir) as (url, tap), httpx.Client(base_url=url, timeout=60) as client:
        ids = create_adventures(client, players)
        wait_idle(client, ids)
        monitor = Monitor(url)
        monitor.start()
        outcomes: list[list[Turn]] = [[] for _ in ids]

        def player(i: int, start: threading.Barrier) -> None:
            outcomes[i] = play(url, ids[i], turns, start)

        began, played = run_together(players, player)
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
        f"(`{COMMAND}`).",
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
