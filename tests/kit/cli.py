"""Running ``talekeeper`` commands in a test.

``run_command`` runs one command in this process: ``talekeeper.cli.main.main`` with exactly
the given environment (nothing else of this process's), the given text on standard input,
and standard output and error captured, as ``python -m talekeeper`` would run it but without
starting an interpreter (about two seconds a command on two cores). What it returns reads
as a finished subprocess: the exit status, stdout and stderr. Where what is tested is the
process itself (two at once, signals, a server, the real entry point), tests start real
processes (``argv``).

``Cli`` is the command line over one data directory against one model double, as the
command-line tests drive it (``one_line_error``: a refused command's one line;
``Terminal``: ``talekeeper play`` line by line; ``api``: the JSON API over the same data);
``talekeeper`` runs one command on a data directory with settings as keywords.

Invariants: the environment, standard streams, the working logging configuration and the
current directory are this process's again after the command, whatever it did or raised;
an exception the command does not handle comes back as its traceback on stderr with exit
status 1, as an interpreter would print it.
"""

from __future__ import annotations

import contextlib
import io
import json
import logging
import os
import re
import subprocess
import sys
import threading
import time
import traceback
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any
from unittest import mock

from fastapi.testclient import TestClient
from sqlalchemy import text
from tests.conftest import LOCAL, data_database, data_env, make_settings
from tests.kit.accounts import PASSWORD
from tests.kit.exchange import TABLES

from talekeeper.storage.db import make_engine
from talekeeper.web.app import create_app
from talekeeper_testkit.double import ModelDouble


def argv(*args: str) -> list[str]:
    """The command line of a real ``talekeeper`` process."""
    return [sys.executable, "-m", "talekeeper", *args]


def run_process(
    args: Sequence[str], env: Mapping[str, str], stdin: str = "", timeout: float = 60
) -> subprocess.CompletedProcess[str]:
    """``python -m talekeeper ARGS`` as a real process: for what only a process shows (what
    native libraries write to its file descriptors, signals, its own interpreter)."""
    return subprocess.run(
        argv(*args),
        env=dict(env),
        input=stdin,
        capture_output=True,
        text=True,
        encoding="utf-8",
        timeout=timeout,
    )


class _Stream(io.TextIOWrapper):
    """A text stream over bytes (so ``.buffer`` takes bytes, as a real stdout does) that is
    not a terminal."""

    def __init__(self, data: bytes = b"") -> None:
        super().__init__(io.BytesIO(data), encoding="utf-8", newline="\n", write_through=True)

    def isatty(self) -> bool:
        return False

    def text(self) -> str:
        self.flush()
        raw = self.buffer
        assert isinstance(raw, io.BytesIO)
        return raw.getvalue().decode("utf-8")


@contextlib.contextmanager
def _logging_kept() -> Iterator[None]:
    """The command configures the root logger for itself (``configure_logging``); the
    test's own handlers (pytest's capture) and levels come back after it."""
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    # The loggers commands set levels on (``configure_logging``, ``play``).
    others = {name: logging.getLogger(name).level for name in ("alembic", "httpx", "procrastinate")}
    try:
        yield
    finally:
        for handler in list(root.handlers):
            if handler not in handlers:
                root.removeHandler(handler)
                handler.close()
        for handler in handlers:
            if handler not in root.handlers:
                root.addHandler(handler)
        root.setLevel(level)
        for name, old in others.items():
            logging.getLogger(name).setLevel(old)


def run_command(
    args: Sequence[str], env: Mapping[str, str], stdin: str = ""
) -> subprocess.CompletedProcess[str]:
    """``talekeeper ARGS`` run in this process (see the module docstring)."""
    from talekeeper.cli.main import main

    out, err, given = _Stream(), _Stream(), _Stream(stdin.encode("utf-8"))
    cwd = os.getcwd()
    code: int
    with (
        mock.patch.dict(os.environ, dict(env), clear=True),
        mock.patch.object(sys, "stdin", given),
        mock.patch.object(sys, "stdout", out),
        mock.patch.object(sys, "stderr", err),
        _logging_kept(),
    ):
        try:
            code = main(list(args))
        except SystemExit as exc:  # argparse, and commands that exit on their own
            if exc.code is None:
                code = 0
            elif isinstance(exc.code, int):
                code = exc.code
            else:
                print(exc.code, file=sys.stderr)
                code = 1
        except Exception:  # noqa: BLE001 -- shown as the interpreter would show it
            traceback.print_exc(file=sys.stderr)
            code = 1
        finally:
            os.chdir(cwd)
    return subprocess.CompletedProcess(list(args), code, out.text(), err.text())


# -- the command line as the tests drive it ---------------------------------------------

TIMEOUT = 30  # seconds for any one command: a hang fails the test instead of the suite


class Cli:
    """The command line over one data directory, against one model double."""

    def __init__(self, data: Path, double: ModelDouble) -> None:
        self.data = data
        self.double = double
        self.env = {
            **data_env(data),
            "TALEKEEPER_ENDPOINT_URL": double.url,
            "TALEKEEPER_MODEL": "double-narrator",
            "TALEKEEPER_EMBEDDING_MODEL": "double-embed",
            "TALEKEEPER_SUMMARY_MODEL": "double-summary",
            "PATH": os.environ["PATH"],
        }

    def argv(self, *args: str) -> list[str]:
        return [sys.executable, "-m", "talekeeper", *args]

    def run(self, *args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
        """One command, in this process (``kit.cli.run_command``)."""
        done = run_command(args, self.env, stdin)
        assert "Traceback" not in done.stdout + done.stderr, done.stderr
        return done

    def run_all(
        self, commands: Sequence[Sequence[str]], *, traceback_ok: bool = False
    ) -> list[subprocess.CompletedProcess[str]]:
        """Independent commands at the same time (they only read, or fail before committing):
        two processes at once must be fine, and it saves wall time."""
        started = [
            subprocess.Popen(
                self.argv(*args),
                env=self.env,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                encoding="utf-8",
            )
            for args in commands
        ]
        results = []
        try:
            for args, process in zip(commands, started, strict=True):
                out, err = process.communicate(timeout=TIMEOUT)
                assert traceback_ok or "Traceback" not in out + err, err
                results.append(
                    subprocess.CompletedProcess(list(args), process.returncode, out, err)
                )
        finally:
            for process in started:
                if process.poll() is None:
                    process.kill()
                    process.communicate()
        return results

    def new(self, scenario: str = "lantern-coast") -> int:
        done = self.run("new", "--scenario", scenario)
        assert done.returncode == 0, done.stderr
        assert re.fullmatch(r"\d+\n", done.stdout), done.stdout
        return int(done.stdout)

    def export(self, adventure: int) -> tuple[str, dict[str, Any]]:
        done = self.run("export", str(adventure))
        assert done.returncode == 0, done.stderr
        return done.stdout, json.loads(done.stdout)

    def counts(self) -> dict[str, int]:
        """Rows per table: what an import that fails must leave exactly as it was."""
        return {t: self.query(f"SELECT count(*) FROM {t}")[0][0] for t in TABLES}

    def query(self, sql: str, **params: Any) -> list[tuple[Any, ...]]:
        """Rows read straight from the database the commands use, as another process."""
        engine = make_engine(data_database(self.data))
        try:
            with engine.connect() as connection:
                return [tuple(row) for row in connection.execute(text(sql), params)]
        finally:
            engine.dispose()


class Terminal:
    """``talekeeper play`` driven line by line, so the test can act between two commands
    (queue a model fault, read an id the game printed) exactly when the game waits."""

    def __init__(self, cli: Cli, *args: str) -> None:
        self.process = subprocess.Popen(
            cli.argv("play", *args),
            env=cli.env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        self._out = bytearray()
        self._err = bytearray()
        self._changed = threading.Condition()
        assert self.process.stdout is not None and self.process.stderr is not None
        self._readers = [
            threading.Thread(target=self._pump, args=(self.process.stdout, self._out), daemon=True),
            threading.Thread(target=self._pump, args=(self.process.stderr, self._err), daemon=True),
        ]
        for reader in self._readers:
            reader.start()

    def __enter__(self) -> Terminal:
        return self

    def __exit__(self, *exc_info: object) -> None:
        # A failed assertion must not leave the game waiting on its input for ever.
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait(timeout=TIMEOUT)

    def _pump(self, stream: Any, into: bytearray) -> None:
        while chunk := stream.read1(65536):
            with self._changed:
                into.extend(chunk)
                self._changed.notify_all()

    @property
    def stdout(self) -> str:
        with self._changed:
            return self._out.decode("utf-8")

    @property
    def stderr(self) -> str:
        with self._changed:
            return self._err.decode("utf-8")

    def send(self, lines: Sequence[str]) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write("".join(line + "\n" for line in lines).encode("utf-8"))
        self.process.stdin.flush()

    def wait_for(self, pattern: str) -> re.Match[str]:
        """The first match of ``pattern`` followed by the prompt: that command is done and
        the game is waiting for the next line."""
        deadline = time.monotonic() + TIMEOUT
        regex = re.compile(pattern + r"(?=[\s\S]*\n> $)")
        with self._changed:
            while (found := regex.search(self._out.decode("utf-8"))) is None:
                left = deadline - time.monotonic()
                if left <= 0 or self.process.poll() is not None:
                    raise AssertionError(f"no {pattern!r} in:\n{self.stdout}\n{self.stderr}")
                self._changed.wait(min(left, 0.5))
            return found

    def finish(self) -> int:
        assert self.process.stdin is not None
        self.process.stdin.close()
        code = self.process.wait(timeout=TIMEOUT)
        for reader in self._readers:
            reader.join(timeout=TIMEOUT)
        return code


def one_line_error(done: subprocess.CompletedProcess[str]) -> str:
    """The single ``talekeeper: ...`` line of a refused command (nothing on stdout)."""
    assert done.returncode != 0 and done.stdout == ""
    lines = done.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("talekeeper: "), done.stderr
    return lines[0]


def api(cli: Cli) -> TestClient:
    """The JSON API in this process, over the same data directory as the command line."""
    settings = make_settings(
        cli.data.parent,
        endpoint_url=cli.double.url,
        model="double-narrator",
        embedding_model="double-embed",
    )
    assert Path(settings.data_dir) == cli.data
    return TestClient(create_app(settings), base_url=LOCAL)


def as_accounts(cli: Cli) -> Cli:
    """The same data directory and double, with the server's mode set to accounts."""
    other = Cli(cli.data, cli.double)
    other.env = cli.env | {"TALEKEEPER_AUTH": "accounts"}
    return other


def add_account(cli: Cli, name: str, *flags: str) -> None:
    done = cli.run("users", "add", name, *flags, stdin=PASSWORD + "\n")
    assert done.returncode == 0, done.stderr


def talekeeper(
    data: Path, *args: str, stdin: str = "", process: float | None = None, **env: str
) -> subprocess.CompletedProcess[str]:
    """``talekeeper ARGS`` on the data dir ``data``, with ``env`` as settings
    (``reply_tokens="24"`` is ``TALEKEEPER_REPLY_TOKENS=24``), run in this process
    (``kit.cli.run_command``), or with ``process`` (a time limit in seconds) as a real
    process (``kit.cli.run_process``)."""
    environ = {**data_env(data), "PATH": os.environ["PATH"]}
    environ.update({"TALEKEEPER_" + k.upper(): v for k, v in env.items()})
    if process is not None:
        done = run_process(args, environ, stdin, timeout=process)
    else:
        done = run_command(args, environ, stdin)
    assert "Traceback" not in done.stdout + done.stderr, done.stderr
    return done
