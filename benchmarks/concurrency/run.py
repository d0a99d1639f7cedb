"""Concurrency on one server and one SQLite database, background work included: 8 players
playing turns, then 20 clients sending mixed traffic, each round on a fresh live server
(``kit.http``). Target: 0 "database is locked" failures, 0 server errors (503 included: at
this load a busy database must be waited for, not refused) and no other failure.

Players: each plays ``--turns`` turns back to back on its own adventure and connection,
beside one player alone on its own server. AI calls logged as errors count as failures too;
one incident can show in several (a 500 and its log record): they count evidence.

Mixed: ``--clients`` clients, each with its own adventure (one turn played), send their own
``MIX``, shuffled with their index as seed; ``--importers`` of them also import an adventure
file of ``--import-actions`` actions once. A streamed turn that does not end with its
``reply`` event fails (599). Checked on the code from before write transactions took the
lock first (imports of 20,000 actions held in one transaction), it reported the 500s, the
reset connections and the logged tracebacks.

    .venv/bin/python -m benchmarks.concurrency.run [--turns 150] [--players 8]
        [--clients 20] [--ops 50] [--importers 10] [--import-actions 3000]
        [--only players|mixed] [--short] [--write FILE]

``--write`` also saves the players' plot beside FILE (``docs/benchmarks/concurrency.png``).
The exit status is 1 when the players saw "database is locked" or the mixed run any failure.
"""

from __future__ import annotations

import json
import random
import sys
import tempfile
from argparse import Namespace
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
from benchmarks.kit.http import (
    ACTIONS,
    MONITOR_SECONDS,
    REPLY,
    Player,
    Round,
    action_text,
    create_adventures,
    failures_seen,
    live_server,
    locked,
    play_round,
    quantile,
)
from benchmarks.kit.report import Clock, arguments, publish, pyplot

PROGRAM = ".venv/bin/python -m benchmarks.concurrency.run"
# Each mixed client's mix, per 50 requests (imports come on top).
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


@dataclass
class Measured(Round):
    """A players round, with what its background work wrote and the AI call log's errors."""

    call_errors: list[str] = field(default_factory=list)
    memories: int = 0
    embedded: int = 0
    summaries: int = 0  # summary versions written

    def failures(self) -> list[str]:
        return super().failures() + [f"AI call {e}" for e in self.call_errors]


@dataclass
class Client(Player):
    card: int = 0  # the story card its edits aim at
    action: int = 0  # the action its edits aim at: its last turn's
    plan: list[str] = field(default_factory=list)  # its mix, in the order it sends it


def main(argv: list[str] | None = None) -> int:
    parser = arguments(__doc__.split("\n\n")[0])
    parser.add_argument("--turns", type=int, default=150, help="turns per player")
    parser.add_argument("--players", type=int, default=8)
    parser.add_argument("--clients", type=int, default=20, help="clients of the mixed run")
    parser.add_argument("--ops", type=int, default=50, help="steps per client (undo+redo: 1)")
    parser.add_argument("--importers", type=int, default=10, help="clients that import once")
    parser.add_argument("--import-actions", type=int, default=3000)
    parser.add_argument("--only", choices=("players", "mixed"), help="run one of the two")
    parser.add_argument("--short", action="store_true", help="a quick run, for development")
    args = parser.parse_args(argv)
    if args.short:
        args.turns, args.ops, args.importers, args.import_actions = 20, 15, 4, 1000
    args.command = " ".join([PROGRAM, *(sys.argv[1:] if argv is None else argv)])
    ok = args.only == "mixed" or players_run(args)
    ok = (args.only == "players" or mixed_run(args)) and ok
    return 0 if ok else 1


def players_run(args: Namespace) -> bool:
    turns, clock = args.turns, Clock(args.command)
    with tempfile.TemporaryDirectory(prefix="talekeeper-concurrency-") as root:
        rounds = []
        for count in sorted({1, args.players}):
            print(f"{count} player(s), {turns} turns each …", file=sys.stderr)
            rounds.append(run_round(count, turns, Path(root) / str(count)))
    clock.stop()
    many = len(rounds[-1].players)
    lines = [
        f"{many} players on one server and one SQLite database (WAL), each playing {turns} "
        "turns back to back on its own adventure (a shipped scenario) and connection through "
        "`POST /api/adventures/{id}/actions` (JSON), all starting together; the real app on "
        "uvicorn on loopback, the loopback model double (a real OpenAI-compatible HTTP server "
        "answering at once) as narrator, embedder and summary model, so the in-process memory "
        "worker writes memories (from the 12th action), summaries (every 15) and embeddings "
        "on the same database meanwhile. The wait for the background work to finish (every "
        'kind idle, nothing pending) counts in "turns/s with background" and "drain". '
        "Failures: non-2xx answers, failed background passes (`/api/derived`, polled every "
        f"{MONITOR_SECONDS:g} s), AI calls logged as errors, warnings the server logged; "
        '"locked": those whose error text says "database is locked". The first row is one '
        "player alone on a fresh server, the same turns. Latency is the client's, per turn. "
        f"{clock.footer()}",
        "",
        "| players | turns | turns/s | turns/s with background | p50 | p95 | max "
        "| non-2xx | locked | failed passes | AI call errors | warnings logged "
        "| memories (embedded) | summaries | drain |",
        "|---:|" + "---:|" * 14,
    ]
    for r in rounds:
        n, ms = len(r.sent), [s.latency_ms for s in r.sent]
        p50, p95, top = (quantile(ms, q) for q in (0.5, 0.95, 1.0))
        lines.append(
            f"| {len(r.players)} | {n} | {n / r.play_s:.1f} | {n / (r.play_s + r.drain_s):.1f} "
            f"| {p50:.0f} ms | {p95:.0f} ms | {top:.0f} ms | {len(r.bad())} "
            f"| {locked(r.failures())} | {len(r.failed_passes)} | {len(r.call_errors)} "
            f"| {len(r.logged)} | {r.memories} ({r.embedded}) | {r.summaries} "
            f"| {r.drain_s:.1f} s |"
        )
    lines.append("")
    if args.write:
        image = args.write.parent / args.write.stem / "concurrency.png"
        draw(rounds, image)
        lines += [f"![Turn latency, 1 vs {many} players]({image.relative_to(args.write.parent)})"]
        lines.append("")
    texts = [r.failures() for r in rounds]
    stuck, count = sum(locked(t) for t in texts), sum(len(t) for t in texts)
    lines.append(
        f'Target (0 "database is locked" failures): **{"met" if stuck == 0 else "missed"}** '
        f"({stuck} locked, {count} failures of any kind)."
    )
    if count:
        lines += ["", "Failures seen:", ""]
        for r, seen in zip(rounds, texts, strict=True):
            lines += failures_seen(seen, 5, f"{len(r.players)} player(s): ")
    publish("\n".join(lines), args.write, "concurrency", "Concurrency (one SQLite server)")
    return stuck == 0


def run_round(players: int, turns: int, data_dir: Path) -> Measured:
    """A fresh server and database; ``players`` players at once; then the background drain."""
    with live_server(data_dir) as (url, tap), httpx.Client(base_url=url, timeout=60) as client:
        who = [Player(adventure) for adventure in create_adventures(client, players)]

        def play(own: httpx.Client, player: Player) -> None:
            for n in range(turns):
                player.turn(own, action_text(n))

        made = Measured(**vars(play_round(url, tap, who, play)))
        for player in who:
            memories = client.get(f"/api/adventures/{player.adventure}/memories?include=all")
            made.memories += len(memories.json())
            made.embedded += sum(m["embedded"] for m in memories.json())
            summary = client.get(f"/api/adventures/{player.adventure}/summary")
            made.summaries += len(summary.json()["versions"])
        params: dict[str, Any] = {"limit": 500}
        while page := client.get("/api/ai-calls", params=params).json():
            made.call_errors += [f"{c['kind']}: {c['error']}" for c in page if c["status"] != "ok"]
            params["before"] = min(c["id"] for c in page)
    return made


def draw(rounds: list[Measured], path: Path) -> None:
    plt = pyplot()
    labels, quantiles = ("p50", "p95", "max"), (0.5, 0.95, 1.0)
    fig, ax = plt.subplots(figsize=(7, 3.8))
    width = 0.8 / len(rounds)
    for i, r in enumerate(rounds):
        xs = [x + (i - (len(rounds) - 1) / 2) * width for x in range(len(labels))]
        ms = [s.latency_ms for s in r.sent]
        bars = ax.bar(xs, [quantile(ms, q) for q in quantiles], width, label=f"{len(r.players)}")
        ax.bar_label(bars, fmt="%.0f", fontsize=8)
    ax.set_xticks(range(len(labels)), labels)
    ax.set(ylabel="turn latency (ms)", title="Turn latency over HTTP, zero-latency model")
    ax.legend(title="players", fontsize=8)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)


def mixed_run(args: Namespace) -> bool:
    ops, actions, importers = args.ops, args.import_actions, min(args.clients, args.importers)
    print(f"mixed traffic: {args.clients} clients, {ops} requests each …", file=sys.stderr)
    clock = Clock(args.command)
    with (
        tempfile.TemporaryDirectory(prefix="talekeeper-mixed-") as root,
        live_server(Path(root)) as (url, tap),
        httpx.Client(base_url=url, timeout=60) as client,
    ):
        mine = []
        for i, adventure in enumerate(create_adventures(client, args.clients)):
            card = client.get(f"/api/adventures/{adventure}/cards").json()[0]["id"]
            turn = client.post(f"/api/adventures/{adventure}/actions", json={"text": ACTIONS[0]})
            action = turn.raise_for_status().json()["action"]["id"]
            plan = [kind for kind, n in MIX.items() for _ in range(max(1, round(n * ops / 50)))]
            plan += ["import"] * (i < importers)
            random.Random(i).shuffle(plan)
            mine.append(Client(adventure, card=int(card), action=int(action), plan=plan))
        base = client.get(f"/api/adventures/{mine[0].adventure}/export").json()
        upload = import_file(base, actions)

        def play(own: httpx.Client, me: Client) -> None:
            for n, kind in enumerate(me.plan):
                step(own, me, kind, n, upload)

        r = play_round(url, tap, mine, play)
        listing = client.get("/api/adventures").json()
    imported = [a["length"] for a in listing if a["title"].startswith("Imported")]
    failures = r.failures()
    server = sum(1 for s in r.sent if s.status >= 500)
    table = [
        "| kind | requests | p50 | p95 | max | 5xx (503 included) | locked | other failures |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for kind in [*MIX, "redo", "import", "all"]:
        if sent := [s for s in r.sent if kind in ("all", s.kind)]:
            p50, p95, top = (quantile((s.latency_ms for s in sent), q) for q in (0.5, 0.95, 1.0))
            bad = [s for s in sent if not s.ok]
            errors = sum(1 for s in bad if s.status >= 500)
            table.append(
                f"| {f'**{kind}**' if kind == 'all' else kind} | {len(sent)} | {p50:.0f} ms "
                f"| {p95:.0f} ms | {top:.0f} ms | {errors} | {locked(s.error for s in bad)} "
                f"| {len(bad) - errors} |"
            )
    lines = [
        f"{len(r.players)} clients at once on one server and one SQLite database (WAL), each "
        "sending its own shuffled mix back to back on its own connection: turns as JSON and "
        "as server-sent events, adventures created and edited (`PATCH`), story cards created "
        "and edited, actions edited, undo each followed by redo, pages of the story read; "
        f"{importers} of them also import an adventure file of {actions:,} actions "
        f"({len(upload) / 1e6:.1f} MB) once. The real app on uvicorn on loopback, the loopback "
        "model double as narrator, embedder and summary model, the memory worker writing "
        "memories, summaries and embeddings meanwhile (the imported stories included). A "
        "streamed turn succeeds only when its stream ends with the `reply` event. "
        '"locked": answers whose error says "database is locked" or `database_busy`; other '
        "failures: 4xx answers, broken streams, transport errors; failed background passes "
        f"and warnings the server logged are counted below. {len(r.sent)} requests in "
        f"{r.play_s:.1f} s, then {r.drain_s:.1f} s until the background work was idle. "
        f"{clock.stop().footer()}",
        "",
        *table,
        "",
        f"Imported adventures: {len(imported)}, of {sorted(set(imported))} actions. "
        f"Failed background passes: {len(r.failed_passes)}; warnings logged: {len(r.logged)}.",
        "",
        'Target (0 server errors, 0 "database is locked", no failure of any kind): '
        f"**{'missed' if failures else 'met'}** ({server} 5xx, {locked(failures)} locked, "
        f"{len(failures)} failures in all).",
    ]
    if failures:
        lines += ["", "Failures seen:", "", *failures_seen(failures, 8)]
    body = "\n".join(lines)
    publish(body, args.write, "concurrency-mixed", "Mixed traffic (one SQLite server)")
    return not failures


def import_file(base: dict[str, Any], actions: int) -> bytes:
    """An export of a real adventure, its story replaced by ``actions`` alternating player
    actions and replies on the main branch (the format's own fields, nothing else)."""
    data = json.loads(json.dumps(base))
    first = base["actions"][0]  # the opening narration: its fields, as the format has them
    story = [{"key": i + 1, "depth": i, "type": "narration", "text": REPLY} for i in range(actions)]
    for i in range(1, actions, 2):
        story[i] |= {"type": "do", "text": action_text(i)}
    data["actions"] = [first | action for action in story]
    data["branches"] = [b for b in data["branches"] if b["key"] == 1]
    data["adventure"]["current_branch"] = 1
    data["adventure"]["title"] = f"Imported, {actions} actions"
    for section in ("insights", "memories", "summaries"):
        data[section] = []
    return json.dumps(data).encode()


def step(client: httpx.Client, me: Client, kind: str, n: int, upload: bytes) -> None:
    """One step of a client's mix (two requests for an undo and its redo)."""
    a, text = me.adventure, action_text(n)
    if kind.startswith("turn"):
        answer = me.turn(client, text, kind=kind, sse=kind == "turn (stream)")
        body = answer.text if answer is not None and answer.is_success else ""
        if body and kind == "turn (stream)":  # a success only when its last event is ``reply``
            last = body.strip().split("\n\n")[-1]  # as ``web.streaming.sse`` writes it
            event, _, body = last.partition("\ndata: ")
            if event != "event: reply":
                me.sent[-1].status, me.sent[-1].error = 599, f"stream ended with: {last[:300]}"
                body = ""
        if body:
            me.action = int(json.loads(body)["action"]["id"])
        return
    requests = {
        "create adventure": lambda: client.post("/api/adventures", json={"title": text}),
        "edit adventure": lambda: client.patch(
            f"/api/adventures/{a}", json={"authors_note": f"Mood {n}: fog."}
        ),
        "create card": lambda: client.post(
            f"/api/adventures/{a}/cards", json={"name": f"Buoy {n}", "entry": text}
        ),
        "edit card": lambda: client.patch(f"/api/cards/{me.card}", json={"notes": text}),
        "edit action": lambda: client.patch(f"/api/actions/{me.action}", json={"text": text}),
        "undo": lambda: client.post(f"/api/adventures/{a}/undo"),
        "read story": lambda: client.get(f"/api/adventures/{a}/actions"),
        "import": lambda: client.post(
            "/api/adventures/import", content=upload, headers={"Content-Type": "application/json"}
        ),
    }
    answer = me.send(kind, requests[kind])
    if kind == "undo" and answer is not None and answer.is_success:
        me.send("redo", lambda: client.post(f"/api/adventures/{a}/redo"))


if __name__ == "__main__":
    raise SystemExit(main())
