"""The knowing benchmark's section of ``docs/benchmarks.md``: leak rate and recall by
witness mode, for the tune seed and the held-out seeds apart, with where leaks came from.

Invariants: every figure is computed from the observations (``measure``); the targets are
stated once here and judged on the held-out figures only; a channel the product does not
label (the Story Summary, the recent history) is a row of its own, never folded away.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from benchmarks.kit.report import Clock
from benchmarks.knowing.generator import KIND_NAMES
from benchmarks.knowing.measure import MODES, Counts, ModeFigures, Rate

SECTION = "knowing"
TITLE = "Who knows what: leak rate"
LEAK_TARGET = 0.02
RECALL_TOLERANCE = 0.02


@dataclass
class SetResult:
    name: str  # "tune" or "held out"
    seeds: list[int]
    figures: dict[str, ModeFigures]
    counts: Counts


@dataclass
class Run:
    tune: SetResult
    held: SetResult | None
    stories_per_seed: int
    facts_per_story: int
    embedder: str
    context_tokens: int
    clock: Clock


def _rate(r: Rate) -> str:
    return f"{r.value:.3f} ({r.hits}/{r.total})" if r.total else "–"


def _row(name: str, cells: Iterable[str]) -> str:
    return f"| {name} | " + " | ".join(cells) + " |"


def _table(s: SetResult) -> str:
    f = [s.figures[m] for m in MODES]
    off = s.figures["off"].recall.value
    rows = [
        _row("figure", MODES),
        "|---|" + "---|" * len(MODES),
        _row("**leak rate**, (b) questions", (_rate(x.leak) for x in f)),
        _row("leak rate, the Story Summary left out", (_rate(x.leak_no_summary) for x in f)),
        _row("leak rate, judged by the place (not the object)", (_rate(x.leak_place) for x in f)),
    ]
    for channel in sorted({c for x in f for c in x.leak_channels}):
        cells = (f"{x.leak_channels[channel]}/{x.leak.total}" for x in f)
        rows.append(_row(f"leaked through `{channel}`", cells))
    rows.append(_row("**recall**, (a) and (c) questions", (_rate(x.recall) for x in f)))
    rows.append(_row("recall: difference from `off`", (f"{x.recall.value - off:+.3f}" for x in f)))
    for kind in ("present", "told"):
        rows.append(_row(f"recall, {KIND_NAMES[kind]}", (_rate(x.kind(kind)) for x in f)))
        cells = (_rate(x.kind(kind + " place")) for x in f)
        rows.append(_row(f"recall of the place, {KIND_NAMES[kind]}", cells))
    rows += [
        _row("recall of the place, (a) and (c)", (_rate(x.recall_place) for x in f)),
        _row("recall in the Memories section, unlabelled", (_rate(x.recall_memories) for x in f)),
        _row(f"recall, {KIND_NAMES['present_left']}", (_rate(x.recall_left) for x in f)),
        _row("**recall**, (a), (a') and (c) questions", (_rate(x.recall_all) for x in f)),
        _row("(b) facts in the Memories section at all", (str(x.strict_in_memories) for x in f)),
        _row("questions whose fact was in the recent history", (str(x.in_history) for x in f)),
    ]
    return "\n".join(rows)


def _counts(s: SetResult) -> str:
    c = s.counts
    kinds = ", ".join(f"{KIND_NAMES[k]} {c.questions[k]}" for k in KIND_NAMES if c.questions[k])
    not_addressed = sum(s.figures[m].not_addressed for m in MODES)
    return (
        f"{c.facts} facts ({c.told} told later to one who was away); questions per mode: "
        f"{kinds}. Questions whose fact was still in the recent history when asked (`off`): "
        f"{c.in_history}. `say` questions the product did not read as addressing the "
        f"character named: {not_addressed}. `story` questions whose prompt was byte-identical "
        f"in `off`, `label` and `strict`: {c.story_same}/{c.story_total} "
        f"(read as addressing someone: {c.story_addressed})."
    )


def verdicts(held: SetResult) -> list[tuple[str, bool]]:
    f, c = held.figures, held.counts
    out = [
        (
            f"leak rate ≤ {LEAK_TARGET} in `{m}` mode: {f[m].leak.value:.3f}",
            f[m].leak.value <= LEAK_TARGET,
        )
        for m in ("label", "strict")
    ]
    for m in ("label", "strict"):
        gap = f["off"].recall.value - f[m].recall.value
        out.append(
            (
                f"recall in `{m}` within {RECALL_TOLERANCE} of `off`: "
                f"{f[m].recall.value:.3f} against {f['off'].recall.value:.3f}",
                gap <= RECALL_TOLERANCE,
            )
        )
    for m in ("label", "strict"):
        gap = f["off"].recall_all.value - f[m].recall_all.value
        out.append(
            (
                f"recall of every fact the character saw or was told, (a') included, in `{m}` "
                f"within {RECALL_TOLERANCE} of `off`: {f[m].recall_all.value:.3f} against "
                f"{f['off'].recall_all.value:.3f}",
                gap <= RECALL_TOLERANCE,
            )
        )
    same = c.story_same == c.story_total and c.story_addressed == 0
    out.append((f"narration that addresses no one unchanged: {c.story_same}/{c.story_total}", same))
    return out


def markdown(run: Run) -> str:
    parts = [
        "When the player's input addresses a character, memories that character did not "
        "witness and was not told of are labelled (`label`) or left out (`strict`); `off` "
        "is today's unfiltered context. **Leak rate**: of the questions addressed to a "
        "character who was away at a fact and never told of it, the share whose prompt "
        "holds the fact's object anywhere a label does not cover (`strict`, `off`: "
        "anywhere). **Recall**: of the questions to one who saw the fact throughout its "
        "memory's stretch or was told of it later, the share whose prompt holds it where no "
        "label covers it. The rows *judged by the place* use the fact's place ('under the "
        "third piling') instead of its object: a telling ('You tell Odo about the brass "
        "astrolabe.') names the object but not where it is, so they count the fact itself. "
        "The Story Summary tells every fact: a `label` turn that addresses someone heads "
        "the Memories section with a note that the summary is the narrator's knowledge, "
        "not theirs (a fact in it then counts as labelled), and a `strict` one leaves it "
        "out; the recent history is not labelled (its own row). (a') questions go to one "
        "who saw the fact but left before its memory's stretch ended: they are not the "
        "memory's witnesses (present throughout its stretch), so only what they saw of it "
        "(its sentences, or its best passage, from actions they were there for) keeps no "
        "label; they are reported apart and in the last recall target. There is no real-text "
        "figure beside these: no real story here says who was present at each sentence, "
        "and the generated one's arrivals and tellings are in the plain words the rules "
        "read, so real writing would leave more people's presence unknown.",
    ]
    if run.held is not None:
        lines = [f"- {'met' if ok else '**not met**'}: {text}" for text, ok in verdicts(run.held)]
        parts.append("Targets, on the held-out seeds:\n\n" + "\n".join(lines))
    for s in [run.tune, *([run.held] if run.held else [])]:
        seeds = ", ".join(map(str, s.seeds))
        parts.append(f"### {s.name.capitalize()} (seed {seeds})\n\n{_table(s)}\n\n{_counts(s)}")
    parts.append(_how(run))
    parts.append(run.clock.footer())
    return "\n\n".join(parts)


def _how(run: Run) -> str:
    held = ", ".join(map(str, run.held.seeds)) if run.held else "none"
    return (
        "How it was made (`benchmarks/knowing/`): per seed, "
        f"{run.stories_per_seed} generated stories of {run.facts_per_story} facts, each a "
        "cast of six named people who arrive and leave in sentences the world's rules read "
        '("Tobin arrives."), each fact stated with a known subset present ("Maren hides the '
        'brass astrolabe under the third piling."), some later told in private to one who '
        'was away ("You tell Odo about the brass astrolabe."), then filler until the facts '
        "have left the recent history, and everyone gathered. Played through the real "
        "`TurnRunner` (the model double narrating, the extractive memory writer, the "
        f"{run.embedder} embedder, {run.context_tokens:,}-token context); then each question is "
        "a dry run in `off`, `label` and `strict`. The truth is the generator's: who was "
        "present at the fact's action. (a') questions go to one who saw the fact but left "
        "before its six-action block ended; the product marks only what of the memory they "
        "missed (its sentences and passages read by the action each comes from), a rule "
        "made on the tune seed's (a') misses. "
        f"Tune seed {run.tune.seeds[0]}; held-out seeds {held}, fixed before the first run "
        "and never tuned on."
    )
