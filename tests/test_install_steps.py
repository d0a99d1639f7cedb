"""``make``'s set-up talks: each slow step (``scripts/step.py``) says what it does and how
long it usually takes, shows progress, and a failed one ends with what to do."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
STEP = ROOT / "scripts" / "step.py"


def step(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(STEP), *args],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
    )


def python(code: str) -> list[str]:
    return [sys.executable, "-c", code]


def test_a_step_says_what_it_does_and_keeps_the_output_in_its_log(tmp_path: Path) -> None:
    log = tmp_path / "logs" / "greet.log"
    done = step(
        tmp_path,
        "Greeting the world",
        "--about",
        "a moment",
        "--log",
        str(log),
        "--",
        *python("import sys; print('hello from the step'); print('to stderr', file=sys.stderr)"),
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "==> Greeting the world (a moment)"
    assert re.fullmatch(r"    done in \d+ s", lines[-1])
    assert "hello from the step" not in done.stdout  # the terminal gets the story of it only
    assert log.read_text().splitlines() == ["hello from the step", "to stderr"]


def test_the_default_log_is_under_the_virtual_environment(tmp_path: Path) -> None:
    done = step(tmp_path, "Saying: yes!", "--", *python("print('yes')"))
    assert done.returncode == 0
    assert (tmp_path / ".venv" / "logs" / "saying-yes.log").read_text() == "yes\n"


def test_a_failed_step_shows_its_last_lines_and_what_to_do(tmp_path: Path) -> None:
    code = "import sys\nfor n in range(40): print(f'line {n}')\nsys.exit(3)"
    failed = step(
        tmp_path,
        "Building things",
        "--fix",
        "Install a compiler, then run make again.",
        "--",
        *python(code),
    )
    assert failed.returncode == 3
    lines = failed.stdout.splitlines()
    assert "failed after" in lines[1] and "exit status 3" in lines[1]
    shown = [line.removeprefix("    | ") for line in lines if line.startswith("    | ")]
    assert shown == [f"line {n}" for n in range(15, 40)]  # the end, where the error is
    assert lines[-2] == "    (all of it: .venv/logs/building-things.log)"
    assert lines[-1] == "==> Install a compiler, then run make again."


def test_a_long_step_reports_progress_while_it_runs(tmp_path: Path) -> None:
    code = (
        "import time\n"
        "for n in range(1, 4):\n"
        "    print(f'[{n}/3] Building CXX object ggml.o', flush=True)\n"
        "    time.sleep(0.6)\n"
    )
    done = step(
        tmp_path,
        "Compiling",
        "--tick",
        "0.25",
        "--progress",
        r"\[[0-9]+/[0-9]+\]",
        "--",
        *python(code),
    )
    assert done.returncode == 0
    ticks = [line for line in done.stdout.splitlines() if "so far" in line]
    assert ticks, done.stdout
    assert any(re.fullmatch(r"    \.\.\. \d+ s so far, \[[123]/3\]", t) for t in ticks), ticks


def test_a_missing_program_is_a_failed_step_with_its_fix(tmp_path: Path) -> None:
    failed = step(tmp_path, "Running cmake", "--fix", "Install CMake.", "--", "no-such-tool-xyz")
    assert failed.returncode == 127
    assert failed.stdout.splitlines()[-1] == "==> Install CMake."
    assert "could not start no-such-tool-xyz" in failed.stdout


def test_a_step_without_a_command_is_refused(tmp_path: Path) -> None:
    assert step(tmp_path, "Nothing").returncode == 2
    assert step(tmp_path, "Nothing", "--").returncode == 2


@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
def test_every_slow_install_command_runs_as_a_step_with_a_fix() -> None:
    planned = subprocess.run(
        ["make", "-n", "-B", "install"], capture_output=True, text=True, cwd=ROOT, timeout=60
    )
    assert planned.returncode == 0, planned.stderr
    commands = planned.stdout.replace("\\\n", " ").splitlines()
    slow = [c for c in commands if "pip install" in c or "-m venv" in c or "eval([" in c]
    assert len(slow) >= 5, commands
    for command in slow:
        assert "scripts/step.py" in command and "--fix" in command, command
    assert any("about 6 minutes" in c and "llama-cpp-python" in c for c in slow)
    assert any("7 minutes" in c for c in commands)  # the whole set-up's time, said first


def test_llama_cpp_is_built_under_its_own_step_before_anything_depends_on_it() -> None:
    """Talekeeper depends on llama-cpp-python: installed first, the package's step would
    build llama.cpp (minutes, the first time) under "Installing Talekeeper"."""
    planned = subprocess.run(
        ["make", "-n", "-B", "install"], capture_output=True, text=True, cwd=ROOT, timeout=60
    )
    commands = planned.stdout.replace("\\\n", " ").splitlines()
    built = next(i for i, c in enumerate(commands) if "Building llama.cpp" in c)
    assert "llama-cpp-python==" in commands[built] and "--no-deps" in commands[built]
    depends = [i for i, c in enumerate(commands) if re.search(r"pip install (-\S+ )*-e ", c)]
    assert depends and all(built < i for i in depends), commands
