"""Fixtures the command-line tests share: ``cli``, the command line over a fresh data
directory against the test's model double (``tests.kit.cli.Cli``)."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.kit.cli import Cli

from talekeeper_testkit.double import ModelDouble


@pytest.fixture
def cli(tmp_path: Path, double: ModelDouble) -> Cli:
    return Cli(tmp_path / "data", double)
