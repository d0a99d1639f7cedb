"""Scale-out: the same players and turns on one process with SQLite, and on 2 app processes
and 2 workers sharing one PostgreSQL (``deploy``, accounts on, the model double holding
every completion ``--delay`` s as a real model takes its time); then the faults of a shared
deployment, while the players play: a worker killed (SIGKILL) while jobs run, an app process
killed mid-turn, the PostgreSQL server restarted. After each run, what was left (``checks``).

    .venv/bin/python -m benchmarks.scaleout.run [--players 32] [--turns 20] [--delay 1.0]
        [--fault-turns 30] [--short] [--keep DIR] [--write docs/benchmarks.md]

It needs PostgreSQL's server programs (Debian: ``apt-get install postgresql``). The exit
status is 1 when an action or a memory was lost or duplicated, passes overlapped, or a
request failed other than as the faults explain.
"""

from __future__ import annotations

import sys
import tempfile
import threading
import time
from argparse import Namespace
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import httpx
from benchmarks.kit.http import HTTP_TIMEOUT, REPLY, Round, quantile, run_together, wait_idle
from benchmarks.kit.report import Clock, arguments, publish
from benchmarks.scaleout.checks import Left, check, request_runs
from benchmarks.scaleout.deploy import Account, Deployment, make_players, play

from talekeeper_testkit import pg
from talekeeper_testkit.double import ModelDouble

PROGRAM = ".venv/bin/python -m benchmarks.scaleout.run"
CATCH_UP_ROUNDS = 20  # each writes up to 5 memories an adventure
FAULTS = (
    "a worker killed mid-pass",
    "an app process killed mid-turn",
    "PostgreSQL restarted under load",
)

Measured = tuple[str, Round, Left]


@dataclass
class Fault:
    name: str
    at: float = 0.0  # time.perf_counter() when it struck
    recovered_at: float = 0.0
    notes: list[str] = field(default_factory=list)


def main(argv: list[str] | None = None) -> int:
    parser = arguments(__doc__.split("\n\n")[0])
    parser.add_argument("--players", type=int, default=32)
    parser.add_argument("--turns", type=int, default=20, help="turns per player")
    parser.add_argument("--fault-turns", type=int, default=30)
    parser.add_argument("--delay", type=float, default=1.0, help="seconds per completion")
    parser.add_argument("--short", action="store_true", help="8 players, 8 turns: development")
    parser.add_argument("--keep", type=Path, help="run in this folder and keep it (logs, data)")
    args = parser.parse_args(argv)
    if args.short:
        args.players, args.turns, args.fault_turns = 8, 8, 12
    clock = Clock(" ".join([PROGRAM, *(sys.argv[1:] if argv is None else argv)]))
    faults = [Fault(name) for name in FAULTS]
    with (
        ModelDouble(default_reply=REPLY) as double,
        tempfile.TemporaryDirectory(prefix="talekeeper-scaleout-") as temporary,
    ):
        double.reply_delay = args.delay
        root = Path(args.keep or temporary)
        runs = []
        for label, kind, apps, workers, turns, strikes in (
            ("1 process, SQLite", "sqlite", 1, 0, args.turns, []),
            ("2 app processes + 2 workers, PostgreSQL", "postgresql", 2, 2, args.turns, []),
            ("faults", "postgresql", 2, 2, args.fault_turns, faults),
        ):
            print(f"{label}: {args.players} players x {turns} turns …", file=sys.stderr)
            deployment = Deployment(
                kind, root / (label if strikes else kind), double.url, apps, workers
            )
            runs.append(measure(label, deployment, args.players, turns, strikes))
    body = markdown(runs, faults, args, clock.stop())
    publish(body, args.write, "scaleout", "Scale-out (PostgreSQL, app processes, workers)")
    clean = all(left.clean for _, _, left in runs)
    return 0 if clean and not any(r.bad() for _, r, _ in runs[:-1]) else 1


def measure(
    label: str, deployment: Deployment, players: int, turns: int, faults: list[Fault]
) -> Measured:
    """The players' turns on a fresh deployment (with ``faults`` striking meanwhile), then
    ``settle``."""
    deployment.start()
    try:
        who = make_players(deployment, players)
        done = threading.Event()
        strikes = threading.Thread(target=_strike, args=(deployment, faults, done))
        strikes.start()
        try:
            began, ended = run_together(who, lambda c, p: play(deployment, c, p, turns))
        finally:
            done.set()
            strikes.join()
        drain, left = settle(deployment, who)
        if faults:
            _after(deployment, faults, who)
    finally:
        deployment.stop()
    return label, Round(who, ended - began, drain), left


def settle(deployment: Deployment, who: list[Account]) -> tuple[float, Left]:
    """Wait for the background work to drain (its seconds), then ask for the runs the next
    turns would ask for until every due block is written or a round writes none; what was
    left."""
    database = deployment.database_url
    with httpx.Client(base_url=deployment.live("serve")[0].url, timeout=HTTP_TIMEOUT) as client:
        drain = wait_idle(client, who, pause=0.25)
        left = check(database, who)
        behind, rounds = left.lost_memories, 0
        while left.lost_memories and rounds < CATCH_UP_ROUNDS:
            rounds += 1
            request_runs(database, who)
            wait_idle(client, who, pause=0.25)
            before, left = left.lost_memories, check(database, who)
            if left.lost_memories >= before:
                break
    left.behind, left.catch_up_runs = behind, rounds
    return drain, left


def _running(deployment: Deployment) -> int:
    assert deployment.cluster is not None
    with pg.connect(deployment.cluster.url("talekeeper")) as db:
        doing = db.execute("SELECT id FROM procrastinate_jobs WHERE status = 'doing'")
        return len(doing.fetchall())


def _strike(deployment: Deployment, faults: list[Fault], done: threading.Event) -> None:
    if not faults:
        return
    worker, app, database = faults
    done.wait(4.0)
    deadline = time.perf_counter() + 30
    while not done.is_set() and _running(deployment) == 0 and time.perf_counter() < deadline:
        time.sleep(0.05)
    doing = _running(deployment)
    worker.at = time.perf_counter()
    deployment.kill(deployment.live("worker")[0])
    worker.notes.append(f"{doing} job(s) running on the two workers when one was killed")
    done.wait(3.0)
    deployment.worker()  # started again, as a supervisor would
    worker.recovered_at = time.perf_counter()
    done.wait(6.0)
    app.at = time.perf_counter()
    deployment.kill(deployment.live("serve")[0])
    done.wait(3.0)
    deployment.serve()  # started again, as a supervisor would
    app.recovered_at = time.perf_counter()
    done.wait(6.0)
    database.at = time.perf_counter()
    assert deployment.cluster is not None
    deployment.cluster.restart()
    database.recovered_at = time.perf_counter()
    database.notes.append(f"the server was down {database.recovered_at - database.at:.1f} s")


def _after(deployment: Deployment, faults: list[Fault], who: list[Account]) -> None:
    worker, app, database = faults
    retried = _retried(deployment)
    worker.notes.append(f"jobs run more than once (retried after a failure or a stall): {retried}")
    sent = [s for p in who for s in p.sent]
    # In flight when it was killed, or sent to it while it was down.
    cut = [s for s in sent if s.status == 0 and s.ended >= app.at and s.at < app.recovered_at]
    retries = sum(1 for s in sent if s.kind == "retry" and s.ok)
    app.notes.append(
        f"{len(cut)} request(s) cut off or refused by the dead process; {retries} saved "
        "action(s) finished by Retry on the other process"
    )
    window = [s for s in sent if database.at - 1 <= s.at <= database.recovered_at + 5]
    statuses = Counter(s.status for s in window if not s.ok)
    shown = ", ".join(f"{n} x {s or 'no answer'}" for s, n in sorted(statuses.items()))
    database.notes.append(f"failed requests around the restart: {shown or 'none'}")
    first_ok = min((s.ended for s in window if s.at >= database.recovered_at), default=None)
    if first_ok is not None:
        database.notes.append(f"first turn answered {first_ok - database.recovered_at:.1f} s after")
    gave_up = [p.gave_up for p in who if p.gave_up]
    if gave_up:
        faults.append(Fault("players that gave up", notes=[f"{len(gave_up)} ({gave_up[0]})"]))


def _retried(deployment: Deployment) -> int:
    """Runs that ran again: put back after their worker went silent, or after an error or an
    abort. Read from the workers' logs, since a job that ends well is deleted with its
    attempts count."""
    again = ("it runs again", "ended with status: Error, to retry", "Aborted, to retry")
    logs = [log.read_text(errors="replace") for log in deployment.root.glob("worker-*.log")]
    return sum(any(mark in line for mark in again) for line in "\n".join(logs).splitlines())


def markdown(runs: list[Measured], faults: list[Fault], args: Namespace, clock: Clock) -> str:
    lines = [
        f"{args.players} players (accounts on), {args.turns} turns each, the model double "
        f"holding every completion {args.delay:g} s. {clock.footer()}",
        "",
        "| deployment | turns/s | p50 ms | p95 ms | failed requests | background calls "
        "| memories | drain s | behind (catch-up runs) | lost actions "
        "| lost / duplicated memories | overlapping passes |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for label, r, left in runs:
        done = [s.latency_ms for s in r.sent if s.ok]
        lines.append(
            f"| {label} | {left.acknowledged / r.play_s:.1f} | {quantile(done, 0.5):.0f} | "
            f"{quantile(done, 0.95):.0f} | {len(r.bad())} | {left.background_calls} | "
            f"{left.memories} | {r.drain_s:.1f} | {left.behind} ({left.catch_up_runs}) | "
            f"{left.lost_actions} (+{left.doubled_actions} doubled) | "
            f"{left.lost_memories} / {left.duplicated_memories} | {left.overlapping_passes} |"
        )
    lines += [
        "",
        "Turns/s: acknowledged turns over the time from the first send to the last answer. "
        "Background calls: the memory and summary model calls made. Drain: seconds from the "
        "last answer until no run waited or ran. Behind: blocks of the stories then still "
        "without their memory (a run writes at most 5, and a failed pass waits for the next "
        "run, which the next turn asks for); the benchmark then asks for those runs itself, "
        "round after round, until none is due or a round writes nothing (catch-up runs: how "
        "many rounds). Lost memories: blocks still due after that.",
        "",
        "Everything shares this one machine's cores (app processes, workers, PostgreSQL, the "
        "model double, the players' threads), so the second deployment's gain here is a "
        "floor, not what a second machine gives. A worker runs 4 adventures at once "
        "(`--concurrency`), 8 for the two, where SQLite's in-process worker starts every "
        f"adventure that waits: with each call taking {args.delay:g} s the workers fall "
        "behind during play and catch up after it (drain). The faults strike during play: a "
        "worker killed (SIGKILL) while runs go on and started again 3 s later, as a "
        "supervisor would; 6 s on, an app process killed and started again 3 s later (its "
        "players fail over to the other process and Retry a saved action, or resend one not "
        "saved); 6 s on, PostgreSQL restarted (fast shutdown: every session cut off).",
        "",
        "Faults (the last row above), on the PostgreSQL deployment:",
        "",
    ]
    for fault in faults:
        lines.append(f"- **{fault.name}**: " + "; ".join(fault.notes) + ".")
    return "\n".join(lines)


if __name__ == "__main__":
    raise SystemExit(main())
