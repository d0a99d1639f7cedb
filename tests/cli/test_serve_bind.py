"""``talekeeper serve`` in local mode binds a loopback address only: local mode has no login,
so a wider bind is refused with exit status 2 and a sentence on how to expose it safely,
before any server starts. Accounts mode, where every request signs in, may bind wider."""

from __future__ import annotations

import os
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from talekeeper.cli.main import main


@pytest.fixture
def busy_port() -> Iterator[int]:
    """A port already taken on every IPv4 address: a server that did start would fail to
    bind it at once, so a guard that let a bind through ends the command instead of
    serving (the test never hangs on a running server)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as taken:
        taken.bind(("0.0.0.0", 0))
        taken.listen()
        yield taken.getsockname()[1]


def environ(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, host: str, port: int) -> None:
    for name in [n for n in os.environ if n.startswith("TALEKEEPER_")]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("TALEKEEPER_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("TALEKEEPER_HOST", host)
    monkeypatch.setenv("TALEKEEPER_PORT", str(port))


@pytest.mark.parametrize(
    "host",
    ["0.0.0.0", "::", "[::]", "192.168.1.20", "10.0.0.5", "talekeeper.lan", "localhost.evil"],
)
def test_a_bind_beyond_loopback_is_refused_with_how_to_expose_it_safely(
    host: str,
    busy_port: int,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    environ(monkeypatch, tmp_path, host, busy_port)
    assert main(["serve"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("talekeeper: TALEKEEPER_HOST is ")
    for words in (
        "no login",
        "read and change every story",
        "127.0.0.1",
        "reverse proxy",
        "TALEKEEPER_ALLOWED_HOSTS",
        "TALEKEEPER_AUTH=accounts",
        "talekeeper users add NAME --admin",
    ):
        assert words in err, words
    assert not (tmp_path / "data").exists()  # refused before anything was opened or built


def test_a_loopback_bind_is_let_through(
    busy_port: int,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    environ(monkeypatch, tmp_path, "127.0.0.2", busy_port)  # any of 127.0.0.0/8
    with pytest.raises(SystemExit) as ended:  # past the guard: the server met the taken port
        main(["serve"])
    assert ended.value.code != 2
    assert "no login" not in capsys.readouterr().err


def test_accounts_mode_may_bind_beyond_loopback(
    busy_port: int,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    environ(monkeypatch, tmp_path, "0.0.0.0", busy_port)
    monkeypatch.setenv("TALEKEEPER_AUTH", "accounts")
    with pytest.raises(SystemExit) as ended:  # past the guard: the server met the taken port
        main(["serve"])
    assert ended.value.code != 2
    assert "no login" not in capsys.readouterr().err
