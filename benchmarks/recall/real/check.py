"""Read a region's text and check its question file.

    .venv/bin/python -m benchmarks.recall.real.check show REGION [FIRST LAST] [--corpus DIR]
    .venv/bin/python -m benchmarks.recall.real.check validate [REGION ...] [--corpus DIR]

``show`` prints the region's units with their indices (the numbers a question's
``unit`` uses); ``validate`` checks the question files and prints each resolved
evidence span and the set's make-up.
"""

from __future__ import annotations

import argparse
import json
import sys

from benchmarks.recall.real.questions import FOLDER, QuestionError, parse, tally
from benchmarks.recall.real.texts import REGIONS, find_corpus, units


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("command", choices=("show", "validate"))
    parser.add_argument("args", nargs="*")
    parser.add_argument("--corpus")
    parser.add_argument("--quiet", action="store_true")
    ns = parser.parse_args(argv)
    folder = find_corpus(ns.corpus)
    if ns.command == "show":
        region = REGIONS[ns.args[0]]
        first = int(ns.args[1]) if len(ns.args) > 1 else region.start
        last = int(ns.args[2]) if len(ns.args) > 2 else region.end
        text = units(folder, region.file)
        for i in range(max(first, region.start), min(last, region.end) + 1):
            mark = "" if region.askable(i) else " (too late to ask about)"
            print(f"[{i}]{mark} {text[i]}\n")
        return 0
    failed = 0
    for key in ns.args or sorted(REGIONS):
        path = FOLDER / f"{key}.json"
        if not path.exists():
            print(f"{key}: no question file yet")
            continue
        try:
            questions = parse(folder, json.loads(path.read_text(encoding="utf-8")))
        except (QuestionError, json.JSONDecodeError) as exc:
            print(f"FAIL {exc}")
            failed += 1
            continue
        if not ns.quiet:
            for q in questions:
                print(f"{q.id} [{q.kind.value}/{q.asked_as}] {q.text}")
                for e in q.evidence:
                    print(f"    unit {e.unit} (offset {e.offset}) {list(e.answer)}: {e.span}")
        print(f"{key}: {tally(questions)}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
