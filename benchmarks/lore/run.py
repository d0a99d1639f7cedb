"""The lore clerk's card proposals on generated and real stories (``sets``), replayed turn
by turn as play runs the clerk and scored (``measure``): entity recall, title precision,
duplicate rate and unsupported lines, the tune seed's stories and the held-out ones
reported apart (the split is fixed in ``sets`` before any tuning).

    .venv/bin/python -m benchmarks.lore.run [--write docs/benchmarks.md] [--quick]

``--quick``: the tune seed's two stories only. The real texts are read from the corpus
folder (``$TALEKEEPER_CORPUS``, or ``corpus`` beside the checkout); without it the section
says so. Progress goes to stderr.
"""

from __future__ import annotations

import sys
import time

from benchmarks.kit.report import Clock, arguments, publish
from benchmarks.lore.measure import EVERY, WITHIN, Score, replay, score
from benchmarks.lore.sets import all_sets, corpus

from talekeeper.services.world.clerk import LEAST_ACTIONS

# The history of the held-out figures: each first run, before what it showed was changed.
HISTORY = (
    "History: the held-out dense stories were first run before two changes that run showed "
    "were needed (a speaker's name in capitals made a keyword, a family name no longer "
    "standing for each of the family) and gave the figures above, the same. The real texts "
    "were then cut in two, a part to tune on and a held-out part, and the held-out parts run "
    "once at the rules of that time: Pride and Prejudice, the rest, recall 32/40 = 0.80, "
    "precision 40/48 = 0.83, duplicates 0.042; Shakespeare, later plays, recall 35/52 = 0.67, "
    "precision 50/58 = 0.86, duplicates 0.069. The rules were then changed on the tuned parts "
    "only (verse's capitals, a script's speakers and speech, speech a name is said to speak, "
    "a family in the plural, contractions, a name's leading words) and the held-out parts "
    "run again: the figures above. Between the two runs the hand lists gained the people and "
    "places a run proposed that they lacked (Mrs. Hill, Mrs. Annesley, the Lakes; in the "
    'plays England, the Tower, Mars, Mistress Shore, Tarquin, Plantagenet), lost "town" as '
    'a name of London, and a crowd speaking ("ALL:") became neutral.'
)
SECTION = "lore-clerk"
TITLE = "Lore clerk"
COMMAND = ".venv/bin/python -m benchmarks.lore.run --write docs/benchmarks.md"


def _row(s: Score) -> str:
    return (
        f"| {s.name} | {'held out' if s.held_out else 'tuned on'} | {s.actions:,} "
        f"| {s.found}/{s.qualifying} = {s.recall:.2f} "
        f"| {s.titled}/{s.proposals} = {s.precision:.2f} "
        f"| {s.duplicate_rate:.3f} | {s.unsupported}/{s.lines} | {s.median_delay:.0f} "
        f"| {s.seconds:.1f} |"
    )


def markdown(scores: list[Score], clock: Clock, found_corpus: bool) -> str:
    lines = [
        f"The clerk replayed as play runs it: after every {EVERY} actions, over the path so",
        "far, with every card and earlier proposal taken (`benchmarks/lore/`). *Recall*: the",
        f"entities named in {LEAST_ACTIONS} actions or more, with no card, that got a proposal",
        f"within {WITHIN} actions of their third; *precision*: the proposals whose name is an",
        "entity's; *duplicates*: the proposals of an entity that already had one or a card;",
        "*unsupported*: the draft's lines with a word their action does not have; *delay*:",
        "the median of actions from the third mention to the proposal. Dense stories: every",
        "name is one the generator made (tune seed 14; held-out seeds 41 and 77, and seed 41",
        "again with every name in Cyrillic letters). Pride and Prejudice (paragraphs, people",
        "and places listed by hand): its first 1,200 paragraphs were read while the rules",
        "were set, the rest (a story of its own) was not. Shakespeare (speeches; the speakers",
        "named in capitals and the people, places and peoples listed by hand; a speaker named",
        'by a role, "Provost:", is *neutral*, neither required nor a stray): Coriolanus and',
        "the start of Richard III were read while the rules were set, the later plays (the",
        "end of Measure for Measure, The Taming of the Shrew, the start of The Tempest) were",
        "not. A proposal that is no listed entity is read by hand: a person or place the list",
        "lacked is added to it (see the history below).",
        "",
        "| story | split | actions | recall | precision | duplicates | unsupported | delay "
        "| seconds |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|",
        *(_row(s) for s in scores),
    ]
    for label, held in (
        ("dense stories", [s for s in scores if s.held_out and s.name.startswith("dense")]),
        ("real texts", [s for s in scores if s.held_out and not s.name.startswith("dense")]),
    ):
        if not held:
            continue
        found, qualifying = sum(s.found for s in held), sum(s.qualifying for s in held)
        titled, proposals = sum(s.titled for s in held), sum(s.proposals for s in held)
        dup = sum(s.duplicates for s in held)
        lines += [
            "",
            f"Held-out {label} together: recall {found}/{qualifying} = "
            f"{found / max(qualifying, 1):.2f}, precision {titled}/{proposals} = "
            f"{titled / max(proposals, 1):.2f}, duplicate rate {dup / max(proposals, 1):.3f}, "
            f"unsupported lines {sum(s.unsupported for s in held)}.",
        ]
    for s in scores:
        if s.misses or s.strays or s.repeats:
            lines += [
                "",
                f"{s.name}: not proposed in time: {', '.join(s.misses[:12]) or 'none'}"
                f"; proposals that are no entity: {', '.join(s.strays[:12]) or 'none'}"
                f"; duplicates (the entity): {', '.join(s.repeats[:12]) or 'none'}"
                + (f"; neutral proposals: {s.neutral}." if s.neutral else "."),
            ]
    lines += ["", HISTORY]
    if not found_corpus:
        lines += ["", "The real texts were not measured: no corpus folder (TALEKEEPER_CORPUS)."]
    return "\n".join(lines) + "\n\n" + clock.footer()


def main() -> None:
    parser = arguments(__doc__ or "")
    parser.add_argument("--quick", action="store_true", help="the tune seed only")
    args = parser.parse_args()
    clock = Clock(COMMAND)
    scores = []
    for story in all_sets(args.quick):
        began = time.perf_counter()
        proposed = replay(story)
        scores.append(score(story, proposed, time.perf_counter() - began))
        print(f"{story.name}: done", file=sys.stderr, flush=True)
    publish(markdown(scores, clock, corpus() is not None), args.write, SECTION, TITLE)


if __name__ == "__main__":
    main()
