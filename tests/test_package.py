from __future__ import annotations

import subprocess
import sys


def test_importing_the_package_builds_nothing() -> None:
    code = (
        "import sys, talekeeper; "
        "heavy = [m for m in ('sqlalchemy', 'llama_cpp', 'onnxruntime', 'fastapi', 'httpx') "
        "if m in sys.modules]; print(heavy)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_cli_db_upgrade_and_a_bad_setting(tmp_path) -> None:  # type: ignore[no-untyped-def]
    env = {"TALEKEEPER_DATA_DIR": str(tmp_path), "PATH": ""}
    ok = subprocess.run(
        [sys.executable, "-m", "talekeeper", "db", "upgrade"],
        env=env,
        capture_output=True,
        text=True,
    )
    from talekeeper.storage import migrate
    from talekeeper.storage.db import make_engine

    head = migrate.head_revision(make_engine("sqlite://"))
    assert ok.returncode == 0 and f"revision {head}" in ok.stdout
    assert (tmp_path / "talekeeper.db").exists()
    bad = subprocess.run(
        [sys.executable, "-m", "talekeeper", "serve"],
        env=env | {"TALEKEEPER_PORT": "x"},
        capture_output=True,
        text=True,
    )
    assert bad.returncode == 2
    assert "TALEKEEPER_PORT='x' is not valid" in bad.stderr and "Traceback" not in bad.stderr


def test_every_cli_command_is_documented_in_docs_cli_md() -> None:
    from pathlib import Path

    from talekeeper.cli.main import COMMANDS

    page = (Path(__file__).resolve().parent.parent / "docs" / "cli.md").read_text()
    assert [c for c in COMMANDS if f"talekeeper {c}" not in page] == []
