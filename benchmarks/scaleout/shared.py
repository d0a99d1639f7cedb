"""Shared play soak: several players take turns on one shared adventure (accounts on)
through 2 app processes and a worker on one PostgreSQL (``deploy``), the model double
holding each completion ``--delay`` s; one app process is killed (SIGKILL) midway and
started again 3 s later. Every member follows the adventure's feed the whole time,
resuming from its last event when its process goes. At the end the host removes a
member, who is asked for the adventure at once through both processes.

    .venv/bin/python -m benchmarks.scaleout.shared [--players 4] [--turns 100]
        [--delay 0.05] [--keep DIR] [--write docs/benchmarks.md]

Measured (docs/sharing.md): lost or duplicated actions (an action answered 2xx that the
story lacks, or holds twice), interleaved replies (an answered action whose next row on
the path is not its reply), 5xx answers, whether each member's stream saw every event of
the feed in order, the delay from an event's commit to its arrival at each page, and
whether the removal held in both processes. The exit status is 1 when any of them fails.
"""

from __future__ import annotations

import json
import sys
import tempfile
import threading
import time
from argparse import Namespace
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import httpx
from benchmarks.kit.http import HTTP_TIMEOUT, REPLY, action_text, quantile, run_together
from benchmarks.kit.report import Clock, arguments, publish
from benchmarks.scaleout.deploy import ADMIN, PASSWORD, Account, Deployment, saved, sign_in
from sqlalchemy import select

from talekeeper.services.memory.source import path_of
from talekeeper.storage.db import make_engine, make_session_factory, read_scope
from talekeeper.storage.models import Adventure, FeedEvent
from talekeeper.storage.repositories.story import StoryRepository
from talekeeper_testkit.double import ModelDouble

PROGRAM = ".venv/bin/python -m benchmarks.scaleout.shared"
KILL_AT = 0.5  # of the turns answered, when an app process is killed
PAUSE_S = 0.3  # before a player tries again after a failure


@dataclass
class Follower:
    """One member's page: the feed events it received, ``(id, kind, data, arrived)``
    (``arrived``: ``time.time()``), and how often it had to reconnect."""

    member: Account
    events: list[tuple[int, str, dict[str, object], float]] = field(default_factory=list)
    reconnects: int = 0
    removed: bool = False

    def last(self) -> int:
        return self.events[-1][0] if self.events else 0


def main(argv: list[str] | None = None) -> int:
    parser = arguments(__doc__.split("\n\n")[0])
    parser.add_argument("--players", type=int, default=4)
    parser.add_argument("--turns", type=int, default=100, help="turns per player")
    parser.add_argument("--delay", type=float, default=0.05, help="seconds per completion")
    parser.add_argument("--keep", type=Path, help="run in this folder and keep it")
    args = parser.parse_args(argv)
    clock = Clock(" ".join([PROGRAM, *(sys.argv[1:] if argv is None else argv)]))
    with (
        ModelDouble(default_reply=REPLY) as double,
        tempfile.TemporaryDirectory(prefix="talekeeper-shared-") as temporary,
    ):
        double.reply_delay = args.delay
        deployment = Deployment("postgresql", Path(args.keep or temporary), double.url, 2, 1)
        deployment.start()
        try:
            figures, clean = soak(deployment, args.players, args.turns)
        finally:
            deployment.stop()
    body = markdown(figures, args, clock.stop())
    publish(body, args.write, "shared", "Shared play (one adventure, several players)")
    return 0 if clean else 1


def soak(deployment: Deployment, players: int, turns: int) -> tuple[dict[str, str], bool]:
    who = gather(deployment, players)
    stop = threading.Event()
    followers = [Follower(member) for member in who]
    threads = [threading.Thread(target=follow, args=(deployment, f, stop)) for f in followers]
    for thread in threads:
        thread.start()
    killer = threading.Thread(target=strike, args=(deployment, who, players * turns))
    killer.start()
    began, ended = run_together(who, lambda c, p: play(deployment, c, p, turns))
    killer.join()
    removal = remove_last(deployment, who, followers)
    stop.set()
    for thread in threads:
        thread.join(30)
    figures, clean = judge(deployment, who, followers)
    figures["turns/s"] = f"{sum(len(p.acknowledged) for p in who) / (ended - began):.1f}"
    figures["removal"] = removal
    return figures, clean and removal.startswith("404 in both")


def gather(deployment: Deployment, count: int) -> list[Account]:
    """``count`` accounts, the first the host of one adventure the others joined as
    players, each signed in to an app process in turn."""
    urls = [app.url for app in deployment.live("serve")]
    who = [Account(name=f"player{i + 1}", app=i % len(urls)) for i in range(count)]
    with httpx.Client(timeout=HTTP_TIMEOUT) as client:
        admin = {"Cookie": f"tk_session={sign_in(client, urls[0], ADMIN)}"}
        for p in who:
            body = {"name": p.name, "password": PASSWORD}
            client.post(urls[0] + "/api/admin/users", json=body, headers=admin).raise_for_status()
            p.cookie = sign_in(client, urls[p.app], p.name)
        host = who[0]
        made = client.post(
            urls[0] + "/api/adventures",
            json={"title": "The Soak", "persona": {"name": "Player 1"}},
            headers=host.headers(),
        )
        aid = int(made.raise_for_status().json()["id"])
        invite = client.post(
            f"{urls[0]}/api/adventures/{aid}/invites",
            json={"uses": count - 1},
            headers=host.headers(),
        )
        code = invite.raise_for_status().json()["code"]
        for n, p in enumerate(who):
            p.adventure = aid
            if n:
                persona = {"persona": {"name": f"Player {n + 1}"}}
                joined = client.post(
                    f"{urls[0]}/api/invites/{code}/join", json=persona, headers=p.headers()
                )
                joined.raise_for_status()
    return who


def follow(deployment: Deployment, page: Follower, stop: threading.Event) -> None:
    """Read the feed as the member's page does until ``stop``, resuming after the last
    event through whichever app process is up."""
    member = page.member
    while not stop.is_set() and not page.removed:
        apps = deployment.live("serve")
        if not apps:
            time.sleep(PAUSE_S)
            continue
        url = f"{apps[member.app % len(apps)].url}/api/adventures/{member.adventure}/events"
        headers = member.headers() | {"Last-Event-ID": str(page.last())}
        try:
            with httpx.stream("GET", url, headers=headers, timeout=httpx.Timeout(10, read=30)) as r:
                event, ident = "", 0
                for line in r.iter_lines():
                    if line.startswith("id: "):
                        ident = int(line[4:])
                    elif line.startswith("event: "):
                        event = line[7:]
                    elif line.startswith("data: "):
                        if event == "removed":
                            page.removed = True
                            return
                        if ident:  # a feed event (presence and the reply so far have no id)
                            page.events.append((ident, event, json.loads(line[6:]), time.time()))
                        event, ident = "", 0
                    if stop.is_set():
                        return
        except httpx.HTTPError:
            pass
        page.reconnects += 1
        member.app += 1  # the load balancer sends the next request elsewhere
        time.sleep(0.2)


def play(deployment: Deployment, client: httpx.Client, player: Account, turns: int) -> None:
    """``turns`` actions, each sent until the story holds it (a person at the page would
    see it there, or send it again); a saved action whose reply was cut off stays as it is."""
    for n in range(turns):
        text = f"{player.name}: {action_text(n)}"
        for _ in range(60):
            apps = deployment.live("serve")
            if not apps:
                time.sleep(PAUSE_S)
                continue
            url = apps[player.app % len(apps)].url
            player.turn(client, text, url)
            if player.sent[-1].ok:
                player.acknowledged.append(text)
                break
            if player.sent[-1].status == 0:
                player.app += 1
            time.sleep(PAUSE_S)
            if holds(deployment, client, player, text):
                break
        else:
            player.gave_up = f"{text}: {player.sent[-1].status} {player.sent[-1].error[:200]}"
            return


def holds(deployment: Deployment, client: httpx.Client, player: Account, text: str) -> bool:
    """Whether the story holds ``text`` among its newest actions, asked of any app up."""
    for app in deployment.live("serve"):
        found = saved(client, app.url, player, text, limit=40)  # other players' turns too
        if found is not None:
            return found
    return False


def strike(deployment: Deployment, who: list[Account], total: int) -> None:
    """Kill the first app process once ``KILL_AT`` of the turns are answered; start another
    3 s later, as a supervisor would."""
    while sum(len(p.acknowledged) for p in who) < KILL_AT * total:
        if all(p.gave_up for p in who):
            return
        time.sleep(0.05)
    deployment.kill(deployment.live("serve")[0])
    time.sleep(3.0)
    deployment.serve()


def remove_last(deployment: Deployment, who: list[Account], pages: list[Follower]) -> str:
    """The host removes the last member; that member asks each app process at once."""
    host, gone = who[0], who[-1]
    apps = deployment.live("serve")
    with httpx.Client(timeout=HTTP_TIMEOUT) as client:
        members = client.get(
            f"{apps[0].url}/api/adventures/{host.adventure}/members", headers=host.headers()
        ).json()
        uid = members[-1]["user_id"]
        url = f"{apps[0].url}/api/adventures/{host.adventure}/members/{uid}"
        client.delete(url, headers=host.headers()).raise_for_status()
        statuses = [
            client.get(f"{app.url}/api/adventures/{gone.adventure}", headers=gone.headers())
            for app in apps
        ]
    codes = [s.status_code for s in statuses]
    deadline = time.monotonic() + 10
    while not pages[-1].removed and time.monotonic() < deadline:
        time.sleep(0.05)
    told = "its page told at once" if pages[-1].removed else "its page never told"
    where = "404 in both processes" if codes == [404] * len(apps) else f"answers {codes}"
    return f"{where}; {told}"


def judge(
    deployment: Deployment, who: list[Account], pages: list[Follower]
) -> tuple[dict[str, str], bool]:
    engine = make_engine(deployment.database_url)
    try:
        with read_scope(make_session_factory(engine)) as session:
            adventure = session.get(Adventure, who[0].adventure)
            assert adventure is not None
            lineage = path_of(session, adventure).lineage
            rows = list(reversed(StoryRepository(session).newest(lineage, 100_000)))
            feed = {
                row.id: row.created_at.timestamp()
                for row in session.scalars(
                    select(FeedEvent).where(FeedEvent.adventure_id == adventure.id)
                )
            }
    finally:
        engine.dispose()
    texts = Counter(r.text for r in rows)
    answered = {t for p in who for t in p.acknowledged}
    lost = sum(1 for t in answered if texts[t] == 0)
    doubled = sum(1 for t in answered if texts[t] > 1)
    after = {r.text: rows[i + 1].type if i + 1 < len(rows) else "" for i, r in enumerate(rows)}
    interleaved = sum(1 for t in answered if after.get(t) != "narration")
    unanswered = sum(1 for r in rows if r.type == "do" and after[r.text] != "narration")
    fivexx = sum(1 for p in who for s in p.sent if s.status >= 500)
    answered_ms = [s.latency_ms for p in who for s in p.sent if s.ok]
    gaps = sum(_gaps(page, feed) for page in pages)
    delays = [arrived - feed[i] for page in pages for i, _, _, arrived in page.events if i in feed]
    clean = lost + doubled + interleaved + fivexx + gaps == 0 and not any(p.gave_up for p in who)
    return {
        "actions answered": str(len(answered)),
        "lost / duplicated": f"{lost} / {doubled}",
        "interleaved replies": str(interleaved),
        "saved, reply cut off by the kill": str(unanswered),
        "5xx": str(fivexx),
        "requests cut off by the kill": str(sum(1 for p in who for s in p.sent if s.status == 0)),
        "turn p50 / p95 / max ms": "{:.0f} / {:.0f} / {:.0f}".format(
            *(quantile(answered_ms, q) for q in (0.5, 0.95, 1.0))
        ),
        "feed events missed or out of order (all pages)": str(gaps),
        "reconnects": str(sum(page.reconnects for page in pages)),
        "commit to page p50 / p95 / max ms": "{:.0f} / {:.0f} / {:.0f}".format(
            *(1000 * quantile(delays, q) for q in (0.5, 0.95, 1.0))
        ),
        "gave up": "; ".join(p.gave_up for p in who if p.gave_up) or "none",
    }, clean


def _gaps(page: Follower, feed: dict[int, float]) -> int:
    """Events this page should have seen (up to its last) that it missed, plus events seen
    out of order or twice."""
    seen = [i for i, _, _, _ in page.events]
    disorder = sum(1 for a, b in zip(seen, seen[1:], strict=False) if b <= a)
    due = {i for i in feed if i <= page.last()}
    return len(due - set(seen)) + disorder


def markdown(figures: dict[str, str], args: Namespace, clock: Clock) -> str:
    lines = [
        f"{args.players} players x {args.turns} turns on one shared adventure, 2 app "
        f"processes and 1 worker on one PostgreSQL, the model double holding each "
        f"completion {args.delay:g} s; the first app process killed once half "
        f"the turns were answered and started again 3 s later. {clock.footer()}",
        "",
        "| measure | value |",
        "|---|---|",
        *(f"| {name} | {value} |" for name, value in figures.items()),
        "",
        "Turns wait for each other (one at a time per adventure), so a turn's time includes "
        "the turns queued before it; a turn of the process that died, answered or waiting, "
        "holds the adventure until its ticket has been silent for 15 s. "
        "A player whose request was cut off looks at the story through the other process "
        "and sends the action again only if the story lacks it. Each page reads the feed "
        "through its own app process and, when that process goes, resumes through the other "
        "with `Last-Event-ID`; events replayed on resuming count in the delays.",
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    raise SystemExit(main())
