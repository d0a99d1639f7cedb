"""The one writer of ``docs/benchmarks.md``: each benchmark owns one marked section.

``write_section`` replaces the text between ``<!-- bench:NAME -->`` and
``<!-- /bench:NAME -->`` (appending the section if it is new), so re-running
one benchmark never disturbs another's figures. ``Clock`` is every run's footer:
the machine, the load average before and after, the time it took and the command
that wrote it, so a figure always says where it came from.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from talekeeper.services.endpoints.bench import machine_description

__all__ = ["Clock", "arguments", "machine_description", "publish", "pyplot", "write_section"]

HEADER = (
    "# Benchmarks\n\n"
    "Figures measured on the reference machine by the commands named in each section.\n"
)


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


def arguments(description: str) -> argparse.ArgumentParser:
    """Every benchmark's command line starts with ``--write FILE``."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--write", type=Path, help="replace this benchmark's section of FILE")
    return parser


@dataclass
class Clock:
    """A run's machine, load average before and after, and seconds, for its footer."""

    command: str
    machine: str = field(default_factory=machine_description)
    began: float = field(default_factory=time.perf_counter)
    load_before: float = field(default_factory=lambda: os.getloadavg()[0])
    load_after: float | None = None
    seconds: float | None = None

    def stop(self) -> Clock:
        self.load_after = os.getloadavg()[0]
        self.seconds = time.perf_counter() - self.began
        return self

    @property
    def load(self) -> tuple[float, float]:
        assert self.load_after is not None, "stop() the clock first"
        return (self.load_before, self.load_after)

    def footer(self) -> str:
        """ "On <machine>, load average 1.0 before and 1.2 after, 59 s in all (`command`)."""
        if self.seconds is None:
            self.stop()
        return (
            f"On {self.machine}, load average {self.load_before:.1f} before and "
            f"{self.load_after:.1f} after, {self.seconds:.0f} s in all (`{self.command}`)."
        )

    def as_dict(self) -> dict[str, Any]:
        """The keys the studies' ``run`` dictionaries have always used."""
        if self.seconds is None:
            self.stop()
        return {
            "machine": self.machine,
            "load": self.load,
            "seconds": self.seconds,
            "command": self.command,
        }


def pyplot() -> Any:
    """matplotlib's pyplot drawing to files only (no display on a server). Imported on
    first use: matplotlib is a development dependency, needed only to draw the plots."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt
