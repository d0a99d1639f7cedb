"""Running ``talekeeper`` commands in a test.

``run_command`` runs one command in this process: ``talekeeper.cli.main.main`` with exactly
the given environment (nothing else of this process's), the given text on standard input,
and standard output and error captured, as ``python -m talekeeper`` would run it but without
starting an interpreter (about two seconds a command on two cores). What it returns reads
as a finished subprocess: the exit status, stdout and stderr. Where what is tested is the
process itself (two at once, signals, a server, the real entry point), tests start real
processes (``argv``).

Invariants: the environment, standard streams, the working logging configuration and the
current directory are this process's again after the command, whatever it did or raised;
an exception the command does not handle comes back as its traceback on stderr with exit
status 1, as an interpreter would print it.
"""

from __future__ import annotations

import contextlib
import io
import logging
import os
import subprocess
import sys
import traceback
from collections.abc import Iterator, Mapping, Sequence
from unittest import mock


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
