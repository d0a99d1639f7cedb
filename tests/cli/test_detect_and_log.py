"""``talekeeper detect`` and a terminal that shows only the story (commands run in this
process, ``kit.cli.run_command``), the loopback double as the model server a player runs."""

from __future__ import annotations

import json
import logging
import re
import subprocess
from pathlib import Path

import pytest
from tests.conftest import make_settings
from tests.kit.cli import talekeeper

from talekeeper.cli.main import configure_logging
from talekeeper.settings import LogTo
from talekeeper_testkit.double import ModelDouble, closed_port_url

# A line as the log formats it: "2026-12-04 23:59:59,123 INFO name: message".
LOG_LINE = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d+ (DEBUG|INFO|WARNING|ERROR|CRITICAL) ")


def port_of(url: str) -> int:
    return int(url.split(":")[2].split("/")[0])


def test_detect_lists_the_server_and_how_to_use_it(tmp_path: Path) -> None:
    closed = port_of(closed_port_url())
    with ModelDouble(models=("llama3.2", "mistral nemo")) as server:
        ports = f"{closed},{port_of(server.url)}"
        shown = talekeeper(tmp_path, "detect", detect_ports=ports)
        as_json = talekeeper(tmp_path, "detect", "--json", detect_ports=ports)
    assert shown.returncode == 0 and shown.stderr == "", shown.stderr
    assert shown.stdout.splitlines() == [
        f"openai-compatible at {server.url}: llama3.2, mistral nemo",
        f"  to use it: TALEKEEPER_ENDPOINT_URL={server.url} TALEKEEPER_MODEL=llama3.2 "
        "(or pick it on the Settings page)",
    ]
    # The same list the web API gives.
    assert json.loads(as_json.stdout) == [
        {"url": server.url, "kind": "openai-compatible", "models": ["llama3.2", "mistral nemo"]}
    ]


def test_detect_says_where_it_looked_when_nothing_answers(tmp_path: Path) -> None:
    closed = port_of(closed_port_url())
    with ModelDouble() as own:
        # Talekeeper's own port is not asked, even when something answers there.
        ports = f"{closed},{port_of(own.url)}"
        shown = talekeeper(tmp_path, "detect", detect_ports=ports, port=str(port_of(own.url)))
        assert own.requests == []
    assert shown.returncode == 0
    assert f"No model server answered on 127.0.0.1 (ports asked: {closed};" in shown.stdout
    assert json.loads(talekeeper(tmp_path, "detect", "--json", detect_ports="").stdout) == []


@pytest.fixture
def endpoint(double: ModelDouble) -> dict[str, str]:
    return {
        "endpoint_url": double.url,
        "model": "double-narrator",
        "embedding_model": "double-embed",
        "summary_model": "double-summary",
    }


def play(tmp_path: Path, endpoint: dict[str, str], **env: str) -> subprocess.CompletedProcess[str]:
    data = tmp_path / "data"
    made = talekeeper(data, "new", "--scenario", "lantern-coast", **endpoint)  # type: ignore[arg-type]
    assert made.returncode == 0, made.stderr
    turns = "".join(f"look at thing {n}\n" for n in range(5)) + "/quit\n"
    return talekeeper(data, "play", stdin=turns, **(endpoint | env))  # type: ignore[arg-type]


def test_play_keeps_its_log_in_the_data_dir(
    tmp_path: Path, endpoint: dict[str, str], double: ModelDouble
) -> None:
    played = play(tmp_path, endpoint, log_level="debug")
    assert played.returncode == 0
    shown = played.stdout.splitlines() + played.stderr.splitlines()
    assert not [line for line in shown if LOG_LINE.match(line)], shown
    assert played.stderr == ""
    log = (tmp_path / "data" / "talekeeper.log").read_text(encoding="utf-8").splitlines()
    assert any(LOG_LINE.match(line) for line in log)
    assert any(" DEBUG " in line for line in log)  # at the level asked


def test_play_can_send_warnings_to_stderr_instead(tmp_path: Path, endpoint: dict[str, str]) -> None:
    played = play(tmp_path, endpoint, log_level="debug", log_to="stderr")
    assert played.returncode == 0
    # The same game logs DEBUG lines to the file (above); here none reach the terminal.
    shown = played.stdout.splitlines() + played.stderr.splitlines()
    assert not [line for line in shown if LOG_LINE.match(line)], shown
    assert not (tmp_path / "data" / "talekeeper.log").exists()


@pytest.mark.parametrize("where", list(LogTo))
def test_a_warning_reaches_stderr_only_when_asked(
    where: LogTo, tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    settings = make_settings(tmp_path, log_to=where, log_level="debug")
    root = logging.getLogger()
    kept = (root.handlers[:], root.level)
    try:
        configure_logging(settings, interactive=True)
        logging.getLogger("talekeeper.test").info("an info line")
        logging.getLogger("talekeeper.test").warning("a warning line")
        for handler in root.handlers:
            handler.flush()
    finally:
        for handler in root.handlers:
            handler.close()
        root.handlers[:], root.level = kept
    err = capfd.readouterr().err
    assert "an info line" not in err
    assert ("a warning line" in err) is (where is LogTo.STDERR)
    if where is LogTo.FILE:
        written = settings.log_file.read_text(encoding="utf-8")
        assert "an info line" in written and "a warning line" in written


def test_other_commands_still_log_to_stderr(tmp_path: Path) -> None:
    done = talekeeper(tmp_path / "data", "db", "upgrade", log_level="debug")
    assert done.returncode == 0
    assert not (tmp_path / "data" / "talekeeper.log").exists()
