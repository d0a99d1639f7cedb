"""Scale-out: the same players and turns on one process with SQLite, and on 2 app processes
and 2 workers sharing one PostgreSQL; then the faults of a shared deployment.

Both deployments are started as docs/deploying.md says (``deploy``), with
accounts on, against the loopback model double (narrator, summary model and embedder)
holding every completion ``--delay`` seconds, as a real model takes its time. ``--players``
players (``players``), each signed in to an app process of its own in turn, play
``--turns`` turns each at once; then the run waits until every adventure's background
work is done and reads what was left (``checks``).

The faults run on the PostgreSQL deployment while the players play: a worker killed
(SIGKILL) while jobs run, an app process killed mid-turn (and started again), the
PostgreSQL server restarted. Each is reported with what it left behind.

    .venv/bin/python -m benchmarks.scaleout.run [--players 32] [--turns 20] [--delay 1.0]
        [--fault-turns 30] [--short] [--keep DIR] [--write docs/benchmarks.md]

Run from the repository root (the model double and the PostgreSQL cluster come from
``tests/``); it needs PostgreSQL's server programs (Debian: ``apt-get install
postgresql``). The exit status is 1 when an action or a memory was lost or duplicated,
passes overlapped, or a request failed other than as the faults explain.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import psycopg
from benchmarks.concurrency.harness import REPLY, run_together
from benchmarks.scaleout.checks import Left, check, due, request_runs
from benchmarks.scaleout.deploy import Deployment
from benchmarks.scaleout.players import Attempt, Player, make_players, play, wait_idle

from benchmarks.kit.report import machine_description, publish
from talekeeper_testkit.double import ModelDouble

PLAYERS = 32
TURNS = 20
FAULT_TURNS = 30
DELAY_S = 1.0
CATCH_UP_ROUNDS = 20  # each writes up to 5 memories an adventure
COMMAND = ".venv/bin/python -m benchmarks.scaleout.run --write docs/benchmarks.md"


@dataclass
class Measured:
    label: str
    players: list[Player]
    play_s: float
    drain_s: float
    left: Left

    @property
    def attempts(self) -> list[Attempt]:
        return [a for p in self.players for a in p.attempts]

    def latency(self, q: float) -> float:
        done = sorted(a.latency_ms for a in self.attempts if 200 <= a.status < 300)
        return done[min(len(done) - 1, round(q * (len(done) - 1)))] if done else 0.0

    def failed(self) -> int:
        return sum(1 for a in self.attempts if not 200 <= a.status < 300)


@dataclass
class Fault:
    name: str
    at: float = 0.0  # time.monotonic() when it struck
    recovered_at: float = 0.0
    notes: list[str] = field(default_factory=list)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.scaleout.run", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--write", type=Path, help="store the section in this Markdown file")
    parser.add_argument("--players", type=int, default=PLAYERS)
    parser.add_argument("--turns", type=int, default=TURNS, help="turns per player")
    parser.add_argument("--fault-turns", type=int, default=FAULT_TURNS)
    parser.add_argument("--delay", type=float, default=DELAY_S, help="seconds per completion")
    parser.add_argument("--short", action="store_true", help="8 players, 8 turns: development")
    parser.add_argument(
        "--keep", type=Path, help="run in this folder and keep it (the processes' logs, data)"
    )
    args = parser.parse_args(argv)
    if args.short:
        args.players, args.turns, args.fault_turns = 8, 8, 12
    load_before = os.getloadavg()[0]
    with (
        ModelDouble(default_reply=REPLY) as double,
        tempfile.TemporaryDirectory(prefix="talekeeper-scaleout-") as temporary,
    ):
        folder = args.keep or temporary
        double.reply_delay = args.delay
        root = Path(folder)
        runs = []
        for label, kind, apps, workers in (
            ("1 process, SQLite", "sqlite", 1, 0),
            ("2 app processes + 2 workers, PostgreSQL", "postgresql", 2, 2),
        ):
            print(f"{label}: {args.players} players x {args.turns} turns …", file=sys.stderr)
            deployment = Deployment(kind, root / kind, double.url, apps=apps, workers=workers)
            runs.append(measure(label, deployment, args.players, args.turns))
        print(f"faults: {args.players} players x {args.fault_turns} turns …", file=sys.stderr)
        deployment = Deployment("postgresql", root / "faults", double.url, apps=2, workers=2)
        faulted, faults = fault_run(deployment, args.players, args.fault_turns)
    body = markdown(runs, faulted, faults, args, (load_before, os.getloadavg()[0]))
    publish(body, args.write, "scaleout", "Scale-out (PostgreSQL, app processes, workers)")
    clean = all(_clean(r.left) and r.failed() == 0 for r in runs) and _clean(faulted.left)
    return 0 if clean else 1


def _clean(left: Left) -> bool:
    return not (
        left.lost_actions
        or left.doubled_actions
        or left.lost_memories
        or left.duplicated_memories
        or left.overlapping_passes
    )


def measure(label: str, deployment: Deployment, players: int, turns: int) -> Measured:
    deployment.start()
    try:
        who = make_players(deployment, players)
        began, ended = run_together(
            players, lambda i, start: play(deployment, who[i], 0, turns, start)
        )
        drain, left = settle(deployment, who)
    finally:
        deployment.stop()
    return Measured(label, who, ended - began, drain, left)


def settle(deployment: Deployment, who: list[Player]) -> tuple[float, Left]:
    """Wait for the background work to drain (its seconds), then ask for the runs the next
    turns would ask for until every due block is written or a round writes none; what was
    left."""
    drain = wait_idle(deployment, who)
    behind = due(deployment.database_url, who)
    rounds, still = 0, behind
    while still and rounds < CATCH_UP_ROUNDS:
        rounds += 1
        request_runs(deployment.database_url, who)
        wait_idle(deployment, who)
        before, still = still, due(deployment.database_url, who)
        if still >= before:
            break
    left = check(deployment.database_url, who, behind)
    left.catch_up_runs = rounds
    return drain, left


def fault_run(deployment: Deployment, players: int, turns: int) -> tuple[Measured, list[Fault]]:
    deployment.start()
    faults = [Fault("a worker killed mid-pass"), Fault("an app process killed mid-turn")]
    faults.append(Fault("PostgreSQL restarted under load"))
    try:
        who = make_players(deployment, players)
        done = threading.Event()
        strikes = threading.Thread(target=_strike, args=(deployment, faults, done))
        strikes.start()
        try:
            began, ended = run_together(
                players, lambda i, start: play(deployment, who[i], 0, turns, start)
            )
        finally:
            done.set()
            strikes.join()
        drain, left = settle(deployment, who)
        _after(deployment, faults, who)
    finally:
        deployment.stop()
    return Measured("faults", who, ended - began, drain, left), faults


def _jobs(deployment: Deployment, status: str) -> int:
    assert deployment.cluster is not None
    with psycopg.connect(deployment.cluster.url("talekeeper").replace("+psycopg", "")) as db:
        row = db.execute("SELECT count(*) FROM procrastinate_jobs WHERE status = %s", (status,))
        return int((row.fetchone() or (0,))[0])


def _strike(deployment: Deployment, faults: list[Fault], done: threading.Event) -> None:
    worker, app, database = faults
    done.wait(4.0)
    deadline = time.monotonic() + 30
    while not done.is_set() and _jobs(deployment, "doing") == 0 and time.monotonic() < deadline:
        time.sleep(0.05)
    doing = _jobs(deployment, "doing")
    worker.at = time.monotonic()
    deployment.kill(deployment.live("worker")[0])
    worker.notes.append(f"{doing} job(s) running on the two workers when one was killed")
    done.wait(3.0)
    deployment.worker()  # started again, as a supervisor would
    worker.recovered_at = time.monotonic()
    done.wait(6.0)
    app.at = time.monotonic()
    deployment.kill(deployment.live("serve")[0])
    done.wait(3.0)
    deployment.serve()  # started again, as a supervisor would
    app.recovered_at = time.monotonic()
    done.wait(6.0)
    database.at = time.monotonic()
    assert deployment.cluster is not None
    deployment.cluster.restart()
    database.recovered_at = time.monotonic()
    database.notes.append(f"the server was down {database.recovered_at - database.at:.1f} s")


def _after(deployment: Deployment, faults: list[Fault], who: list[Player]) -> None:
    worker, app, database = faults
    retried = _retried(deployment)
    worker.notes.append(f"jobs run more than once (retried after a failure or a stall): {retried}")
    # In flight when it was killed, or sent to it while it was down.
    cut = [
        a
        for p in who
        for a in p.attempts
        if a.status == 0 and a.at + a.latency_ms / 1000 >= app.at and a.at < app.recovered_at
    ]
    retries = sum(1 for p in who for a in p.attempts if a.retry and 200 <= a.status < 300)
    app.notes.append(
        f"{len(cut)} request(s) cut off or refused by the dead process; {retries} saved "
        "action(s) finished by Retry on the other process"
    )
    window = [
        a for p in who for a in p.attempts if database.at - 1 <= a.at <= database.recovered_at + 5
    ]
    statuses = Counter(a.status for a in window if not 200 <= a.status < 300)
    shown = ", ".join(f"{n} x {s or 'no answer'}" for s, n in sorted(statuses.items()))
    database.notes.append(f"failed requests around the restart: {shown or 'none'}")
    first_ok = min(
        (a.at + a.latency_ms / 1000 for a in window if a.at >= database.recovered_at),
        default=None,
    )
    if first_ok is not None:
        database.notes.append(f"first turn answered {first_ok - database.recovered_at:.1f} s after")


def _retried(deployment: Deployment) -> int:
    """Runs that ran again: put back after their worker went silent, or after an error or an
    abort. Read from the workers' logs, since a job that ends well is deleted with its
    attempts count."""
    again = ("it runs again", "ended with status: Error, to retry", "Aborted, to retry")
    count = 0
    for log in deployment.root.glob("worker-*.log"):
        for line in log.read_text(errors="replace").splitlines():
            count += any(mark in line for mark in again)
    return count


def markdown(
    runs: list[Measured],
    faulted: Measured,
    faults: list[Fault],
    args: argparse.Namespace,
    load: tuple[float, float],
) -> str:
    lines = [
        f"`{COMMAND}`: {args.players} players (accounts on), {args.turns} turns each, the model "
        f"double holding every completion {args.delay:g} s. {machine_description()}; load "
        f"{load[0]:.1f} before, {load[1]:.1f} after.",
        "",
        "| deployment | turns/s | p50 ms | p95 ms | failed requests | background calls "
        "| memories | drain s | behind (catch-up runs) | lost actions "
        "| lost / duplicated memories | overlapping passes |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in runs + [faulted]:
        turns = r.left.acknowledged
        lines.append(
            f"| {r.label} | {turns / r.play_s:.1f} | {r.latency(0.5):.0f} | "
            f"{r.latency(0.95):.0f} | {r.failed()} | {r.left.background_calls} | "
            f"{r.left.memories} | {r.drain_s:.1f} | {r.left.behind} ({r.left.catch_up_runs}) | "
            f"{r.left.lost_actions} (+{r.left.doubled_actions} doubled) | "
            f"{r.left.lost_memories} / {r.left.duplicated_memories} | "
            f"{r.left.overlapping_passes} |"
        )
    lines += [
        "",
        "Turns/s: acknowledged turns over the time from the first send to the last answer. "
        "Background calls: the memory and summary model calls the runs made. Drain: seconds "
        "from the last answer until no run waited or ran. Behind: blocks of the stories "
        "still without their memory at that moment (a run writes at most 5 memories, and "
        "a failed pass waits for the next run, which the next turn asks for); the benchmark "
        "then asks for those next runs itself, round after round, until none is due or a "
        "round writes nothing (catch-up runs: how many rounds). Lost memories: blocks still "
        "due after that.",
        "",
        "Everything runs on this one machine: the app processes, the workers, PostgreSQL, "
        "the model double and the players' threads share its cores, so the second "
        "deployment's gain here is a floor, not what a second machine gives. A worker runs "
        "4 adventures at once (`--concurrency`), 8 for the two, where SQLite's in-process "
        "worker starts every adventure that waits: with a model answering each call in 1 s "
        "the workers fall behind during play and catch up after it (drain). Each fault "
        "strikes while the players play: a worker is killed (SIGKILL) while runs are going "
        "on and started again 3 s later, as a supervisor would; 6 s on, an app process is "
        "killed and started again 3 s later (its players fail over to the other process and "
        "Retry a saved action, or send one that was not saved); 6 s on, PostgreSQL is "
        "restarted (fast shutdown: every session cut off).",
        "",
        "Faults (the last row above), on the PostgreSQL deployment:",
        "",
    ]
    for fault in faults:
        lines.append(f"- **{fault.name}**: " + "; ".join(fault.notes) + ".")
    gave_up = [p.gave_up for p in faulted.players if p.gave_up]
    if gave_up:
        lines.append(f"- players that gave up: {len(gave_up)} ({gave_up[0]})")
    return "\n".join(lines)


if __name__ == "__main__":
    raise SystemExit(main())
