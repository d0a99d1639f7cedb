"""The deployments the scale-out benchmark runs, and their players.

A deployment is started as docs/deploying.md says: real ``talekeeper`` processes with their
settings in the environment, the database migrated once (``talekeeper db upgrade``),
accounts on. ``sqlite``: one ``talekeeper serve``, whose in-process worker runs the
background passes. ``postgresql``: a PostgreSQL server of its own (``talekeeper_testkit.pg``,
durable), ``apps`` x ``talekeeper serve`` and ``workers`` x ``talekeeper worker``. Each
process logs to a file in the run's folder; ``kill`` is the fault (SIGKILL at once).

A player (``Account``) behaves as a person at a browser would after a failed turn (an error
answer, or the app process gone): it looks at its story and asks for a retry when the action
was saved, or sends it again when not; an app process that does not answer is left for the
next (the load balancer's failover). A turn answered 2xx has its action text (unique per
player, so the check of lost actions can find it) "acknowledged".
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

import httpx
from benchmarks.kit.http import HTTP_TIMEOUT, Player, action_text, double_settings

from talekeeper_testkit import pg

ADMIN = "admin"
PASSWORD = "scale-out-benchmark"  # every account's: the accounts live as long as the run
READY_TIMEOUT_S = 60.0
GRACE_S = 20.0
RETRY_PAUSE_S = 0.5
GIVE_UP_AFTER = 60  # attempts at one turn: a fault that never heals ends the player


@dataclass
class Process:
    name: str
    popen: subprocess.Popen[bytes]
    url: str = ""  # an app's base URL

    @property
    def alive(self) -> bool:
        return self.popen.poll() is None


@dataclass
class Deployment:
    kind: str  # "sqlite" or "postgresql"
    root: Path
    endpoint_url: str  # the model double's
    apps: int = 1
    workers: int = 0
    cluster: pg.Cluster | None = None
    processes: list[Process] = field(default_factory=list)
    _names: int = 0

    @property
    def database_url(self) -> str:
        if self.cluster is None:
            return f"sqlite:///{self.root / 'data' / 'talekeeper.db'}"
        return self.cluster.url("talekeeper")

    def env(self, **extra: str) -> dict[str, str]:
        """The settings every process of the deployment gets (and nothing else of ours)."""
        env = {k: v for k, v in os.environ.items() if not k.startswith("TALEKEEPER_")}
        env |= double_settings(self.endpoint_url) | {"TALEKEEPER_AUTH": "accounts"}
        env |= {"TALEKEEPER_DATA_DIR": str(self.root / "data"), "TALEKEEPER_TIMEOUT": "60"}
        return env | {"TALEKEEPER_DATABASE_URL": self.database_url, **extra}

    def talekeeper(self, *args: str, stdin: str = "") -> None:
        """One command to its end, or an error with its output."""
        done = subprocess.run(
            [sys.executable, "-m", "talekeeper", *args],
            input=stdin,
            capture_output=True,
            text=True,
            env=self.env(),
            timeout=120,
        )
        if done.returncode != 0:
            raise RuntimeError(f"talekeeper {' '.join(args)}: {done.stdout}{done.stderr}")

    def start(self) -> None:
        if self.kind == "postgresql":
            bindir = pg.find_bindir()
            if bindir is None:
                raise RuntimeError(pg.NOT_INSTALLED)
            self.cluster = pg.Cluster(bindir, durable=True)
            self.cluster.start()
            with self.cluster.admin() as admin:
                admin.execute("CREATE DATABASE talekeeper")
        (self.root / "data").mkdir(parents=True, exist_ok=True)
        self.talekeeper("db", "upgrade")
        self.talekeeper("users", "add", ADMIN, "--admin", stdin=PASSWORD + "\n")
        for _ in range(self.apps):
            self.serve()
        for _ in range(self.workers):
            self.worker()

    def _spawn(self, what: str, env: dict[str, str]) -> Process:
        self._names += 1
        name = f"{what}-{self._names}"
        with (self.root / f"{name}.log").open("ab") as log:
            command = [sys.executable, "-m", "talekeeper", what]
            process = Process(name, subprocess.Popen(command, env=env, stdout=log, stderr=log))
        self.processes.append(process)
        return process

    def serve(self) -> Process:
        with socket.socket() as probe:  # a free port
            probe.bind(("127.0.0.1", 0))
            port = int(probe.getsockname()[1])
        process = self._spawn("serve", self.env(TALEKEEPER_PORT=str(port)))
        process.url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + READY_TIMEOUT_S
        while True:
            try:
                # Any answer will do: with accounts on, health wants a signed-in caller.
                if httpx.get(process.url + "/api/health", timeout=2).status_code < 500:
                    return process
            except httpx.TransportError:
                pass
            if not process.alive or time.monotonic() > deadline:
                raise RuntimeError(f"{process.name} did not start: see {self.root}")
            time.sleep(0.2)

    def worker(self) -> Process:
        return self._spawn("worker", self.env())

    def live(self, what: str) -> list[Process]:
        return [p for p in self.processes if p.name.startswith(what) and p.alive]

    @staticmethod
    def kill(process: Process) -> None:
        process.popen.kill()
        process.popen.wait()

    def stop(self) -> None:
        for process in self.processes:
            if process.alive:
                process.popen.terminate()
        for process in self.processes:
            try:
                process.popen.wait(GRACE_S)
            except subprocess.TimeoutExpired:
                self.kill(process)
        if self.cluster is not None:
            self.cluster.stop()


@dataclass
class Account(Player):
    name: str = ""
    app: int = 0  # the index of the app process it talks to now
    acknowledged: list[str] = field(default_factory=list)
    gave_up: str = ""


def sign_in(client: httpx.Client, url: str, name: str) -> str:
    answer = client.post(url + "/api/auth/login", json={"username": name, "password": PASSWORD})
    answer.raise_for_status()
    # Sent by hand from here on: kept in the client, the next sign-in would end it.
    client.cookies.clear()
    return str(answer.cookies["tk_session"])


def make_players(deployment: Deployment, count: int) -> list[Account]:
    """``count`` accounts made by the administrator, each signed in to an app process in
    turn, each with an adventure from the first shipped scenario."""
    urls = [app.url for app in deployment.live("serve")]
    players = []
    with httpx.Client(timeout=HTTP_TIMEOUT) as client:
        admin = {"Cookie": f"tk_session={sign_in(client, urls[0], ADMIN)}"}
        scenario = client.get(urls[0] + "/api/scenarios", headers=admin).json()[0]["id"]
        for i in range(count):
            player = Account(name=f"player{i + 1}", app=i % len(urls))
            body = {"name": player.name, "password": PASSWORD}
            client.post(urls[0] + "/api/admin/users", json=body, headers=admin).raise_for_status()
            url = urls[player.app]
            player.cookie = sign_in(client, url, player.name)
            made = client.post(
                url + "/api/adventures", json={"scenario": scenario}, headers=player.headers()
            )
            player.adventure = int(made.raise_for_status().json()["id"])
            players.append(player)
    return players


def saved(
    client: httpx.Client, url: str, player: Account, text: str, limit: int = 4
) -> bool | None:
    """Whether the newest ``limit`` actions of the story hold ``text`` (None: could not
    look)."""
    try:
        answer = client.get(
            f"{url}/api/adventures/{player.adventure}/actions",
            params={"limit": limit},
            headers=player.headers(),
        )
    except httpx.TransportError:
        return None
    return any(a["text"] == text for a in answer.json()["actions"]) if answer.is_success else None


def play(deployment: Deployment, client: httpx.Client, player: Account, turns: int) -> None:
    """``turns`` turns back to back, each tried until it is answered 2xx (a turn given up
    ends the player)."""
    for n in range(turns):
        text, retry = action_text(n), False
        for _ in range(GIVE_UP_AFTER):
            apps = deployment.live("serve")
            if not apps:  # every app process is down: a person would wait and try again
                time.sleep(RETRY_PAUSE_S)
                continue
            url = apps[player.app % len(apps)].url
            if retry:
                path = f"{url}/api/adventures/{player.adventure}/retry"
                player.send("retry", partial(client.post, path, headers=player.headers()))
            else:
                player.turn(client, text, url)
            if player.sent[-1].ok:
                player.acknowledged.append(text)
                break
            if player.sent[-1].status == 0:
                player.app += 1  # the load balancer sends the next request elsewhere
            time.sleep(RETRY_PAUSE_S)
            apps = deployment.live("serve") or apps
            found = saved(client, apps[player.app % len(apps)].url, player, text)
            retry = retry if found is None else found
        else:
            last = player.sent[-1]
            player.gave_up = f"{text}: {last.status} {last.error[:300]}"
            return
