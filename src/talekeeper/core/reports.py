"""Benchmark reports: each benchmark owns one marked section of ``docs/benchmarks.md``.

``write_section`` replaces the text between ``<!-- bench:NAME -->`` and
``<!-- /bench:NAME -->`` (appending the section if it is new), so re-running
one benchmark never disturbs another's figures.
"""

from __future__ import annotations

import platform
import sys
from pathlib import Path
from typing import Any

HEADER = (
    "# Benchmarks\n\n"
    "Figures measured on the reference machine by the commands named in each section.\n"
)


def machine_description() -> str:
    import os

    return f"{platform.machine()} · {os.cpu_count()} cores · Python {platform.python_version()}"


def write_section(path: Path, name: str, title: str, body: str) -> None:
    start, end = f"<!-- bench:{name} -->", f"<!-- /bench:{name} -->"
    block = f"{start}\n## {title}\n\n{body.strip()}\n{end}"
    text = path.read_text() if path.exists() else HEADER
    if start in text and end in text:
        before, rest = text.split(start, 1)
        after = rest.split(end, 1)[1]
        text = before + block + after
    else:
        text = text.rstrip("\n") + "\n\n" + block + "\n"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def publish(body: str, path: Path | None, name: str, title: str, where: str = "") -> None:
    """A benchmark's report: printed, and written to ``path``'s section ``name`` when given
    (saying so on stderr, with ``where`` anything else it wrote)."""
    print(body)
    if path is not None:
        write_section(path, name, title, body)
        print(f"\nWritten to {path}{where}.", file=sys.stderr)


def pyplot() -> Any:
    """matplotlib's pyplot drawing to files only (no display on a server). Imported on
    first use: matplotlib is a development dependency, needed only to draw the plots."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt
