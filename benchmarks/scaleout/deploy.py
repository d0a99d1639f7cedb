"""The deployments the scale-out benchmark runs, started the way docs/deploying.md
says: real ``talekeeper`` processes (``python -m talekeeper``) with their settings in
the environment, the database migrated once by ``talekeeper db upgrade``, accounts on
(the first administrator by ``talekeeper users add``, the players' accounts by the admin
API).

- ``sqlite``: one ``talekeeper serve`` on the SQLite file of its data folder; its
  in-process worker runs the background passes.
- ``postgresql``: a PostgreSQL server of its own (``talekeeper_testkit.pg``'s cluster, durable:
  fsync and synchronous commits on), ``talekeeper serve`` x ``apps`` on ports of their own
  and ``talekeeper worker`` x ``workers``.

Every process writes its output to a log file in the run's folder. ``stop`` ends them all
(SIGTERM, then SIGKILL after ``GRACE_S``); ``kill`` is the fault (SIGKILL at once).
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

import httpx

from talekeeper_testkit import pg

ADMIN = "admin"
PASSWORD = "scale-out-benchmark"  # every account's: the accounts live as long as the run
READY_TIMEOUT_S = 60.0
GRACE_S = 20.0


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@dataclass
class Process:
    name: str
    popen: subprocess.Popen[bytes]
    log: IO[bytes]
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
        base = {k: v for k, v in os.environ.items() if not k.startswith("TALEKEEPER_")}
        return base | {
            "TALEKEEPER_DATA_DIR": str(self.root / "data"),
            "TALEKEEPER_DATABASE_URL": self.database_url,
            "TALEKEEPER_AUTH": "accounts",
            "TALEKEEPER_ENDPOINT_URL": self.endpoint_url,
            "TALEKEEPER_MODEL": "double-narrator",
            "TALEKEEPER_SUMMARY_MODEL": "double-summary",
            "TALEKEEPER_EMBEDDING_MODEL": "double-embed",
            "TALEKEEPER_TIMEOUT": "60",
            **extra,
        }

    def talekeeper(self, *args: str, stdin: str = "") -> str:
        """One command to its end; its output, or an error with it."""
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
        return done.stdout

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
        log = (self.root / f"{name}.log").open("ab")
        popen = subprocess.Popen(
            [sys.executable, "-m", "talekeeper", what], env=env, stdout=log, stderr=log
        )
        process = Process(name, popen, log)
        self.processes.append(process)
        return process

    def serve(self) -> Process:
        port = free_port()
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

    @property
    def app_urls(self) -> list[str]:
        return [p.url for p in self.processes if p.url]

    def live(self, what: str) -> list[Process]:
        return [p for p in self.processes if p.name.startswith(what) and p.alive]

    @staticmethod
    def kill(process: Process) -> None:
        process.popen.send_signal(signal.SIGKILL)
        process.popen.wait()

    def stop(self) -> None:
        for process in self.processes:
            if process.alive:
                process.popen.send_signal(signal.SIGTERM)
        for process in self.processes:
            try:
                process.popen.wait(GRACE_S)
            except subprocess.TimeoutExpired:
                self.kill(process)
            process.log.close()
        if self.cluster is not None:
            self.cluster.stop()
