"""One slow set-up step of ``make``, told as it goes: what it is doing and how long that
usually takes, a line of progress now and then, and on failure the end of its output and one
sentence that says what to install or retry.

    python3 scripts/step.py TITLE [--about TEXT] [--fix SENTENCE] [--log FILE]
        [--progress REGEX] [--tick SECONDS] -- COMMAND [ARG ...]

Invariants:

- Standard library only: it runs with the system Python, before the virtual environment
  exists.
- The command's output (stdout and stderr together) goes to ``--log`` in full (by default
  ``.venv/logs/<title>.log``, made if missing), never to the terminal while it runs.
- While the command runs, every ``--tick`` seconds (default 30) one line says how long it
  has taken and, with ``--progress``, the newest line of its output that the pattern
  matches (the match itself, e.g. ninja's ``[45/180]``).
- The exit status is the command's. On success one line says how long it took; on failure
  the last ``TAIL`` lines of its output are shown, then the log's path, then ``--fix``.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import threading
import time
from pathlib import Path

TAIL = 25  # lines of a failed step's output shown: enough for a compiler's error


def took(seconds: float) -> str:
    minutes, rest = divmod(int(seconds), 60)
    return f"{minutes} min {rest} s" if minutes else f"{rest} s"


def slug(title: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-")[:60] or "step"


class Output:
    """Reads the command's output into the log and keeps what the progress line needs."""

    def __init__(self, stream: object, log: Path, pattern: re.Pattern[str] | None) -> None:
        self.stream = stream
        self.log = log
        self.pattern = pattern
        self.latest = ""
        self.tail: list[str] = []
        self.thread = threading.Thread(target=self.read, daemon=True)
        self.thread.start()

    def read(self) -> None:
        with self.log.open("w", encoding="utf-8") as out:
            for raw in self.stream:  # type: ignore[attr-defined]
                line = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else raw
                out.write(line)
                out.flush()
                self.tail = [*self.tail[-(TAIL - 1) :], line.rstrip("\n")]
                found = self.pattern.search(line) if self.pattern else None
                if found:
                    self.latest = found.group(0)


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if "--" not in args:
        print("step.py: give the command after --", file=sys.stderr)
        return 2
    split = args.index("--")
    parser = argparse.ArgumentParser(prog="step.py")
    parser.add_argument("title")
    parser.add_argument("--about", default="", help="how long it usually takes, and why")
    parser.add_argument("--fix", default="", help="the sentence said when it fails")
    parser.add_argument("--log", type=Path)
    parser.add_argument("--progress", type=re.compile)
    parser.add_argument("--tick", type=float, default=30.0)
    options = parser.parse_args(args[:split])
    command = args[split + 1 :]
    if not command:
        print("step.py: give the command after --", file=sys.stderr)
        return 2
    log: Path = options.log or Path(".venv") / "logs" / f"{slug(options.title)}.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    about = f" ({options.about})" if options.about else ""
    print(f"==> {options.title}{about}", flush=True)
    started = time.monotonic()
    try:
        child = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    except OSError as exc:
        print(f"    could not start {command[0]}: {exc.strerror}", flush=True)
        print(f"==> {options.fix or 'That step failed.'}", flush=True)
        return 127
    output = Output(child.stdout, log, options.progress)
    while True:
        try:
            status = child.wait(timeout=options.tick)
            break
        except subprocess.TimeoutExpired:
            so_far = f", {output.latest}" if output.latest else ""
            print(f"    ... {took(time.monotonic() - started)} so far{so_far}", flush=True)
    output.thread.join()
    status = status if status >= 0 else 128 - status  # killed by a signal: as a shell says
    elapsed = took(time.monotonic() - started)
    if status == 0:
        print(f"    done in {elapsed}", flush=True)
        return 0
    print(f"    failed after {elapsed} (exit status {status}); the end of its output:", flush=True)
    for line in output.tail:
        print(f"    | {line}", flush=True)
    print(f"    (all of it: {log})", flush=True)
    print(f"==> {options.fix or 'That step failed: the lines above say why.'}", flush=True)
    return status


if __name__ == "__main__":
    raise SystemExit(main())
