"""The prompt-prefix benchmark's report: the ``prefix`` section of ``docs/benchmarks.md`` and
its plot.

``markdown`` writes what was played and on what, the share of each prompt evaluated by
layout and world (the headline), the layouts side by side (``classic``, the order before
there was a choice, against ``cache``) per narrator, context size and world, each game's
figures in full, why the prefix broke and what each section did, and, when no real
narrator was played, the real narrators' figures as they last ran (``HISTORY``, labelled
with their commit). ``draw`` plots the tokens evaluated per turn under each layout and
world at the largest context played, one column per narrator.

Invariants: a section of the docs is written only from what this run measured, but for
``HISTORY``, which says the commit it was measured at; the share Insights gives
(``tokens.prompt_evaluated``) is shown beside the same count made here on the prompt text,
and the report says on how many turns they agree.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from benchmarks.kit.report import pyplot
from benchmarks.prefix import layout
from benchmarks.prefix.narrators import REAL

if TYPE_CHECKING:
    from benchmarks.prefix.game import TurnRecord
    from benchmarks.prefix.run import Figures, Summary

SECTION = "prefix"
TITLE = "Prompt prefix"
PLOT = "prefix.png"
BEFORE, AFTER = "classic", "cache"
# The bar: the median share evaluated at 4,096 tokens under ``cache``, in the moving world.
TARGET, TARGET_CONTEXT = 0.25, 4096
# The real narrators as they last ran (``--full`` at commit 1156e19, 60 turns, seed 19, no
# library): kept until a --full run writes them again.
HISTORY = """History: the real narrators as they last ran, at commit `1156e19` (`--full`,
2 cores, AMD EPYC, llama-cpp-python 0.3.36; 4,507 s). That story was still (no Current state
section yet), and the Memories section then held the memories and only the passage that
won each its place (before commit `bcfccfe`); the scripted narrator's `cache` 4,096 share
was 21% (20% counted with smollm2). At `bcfccfe` the section began to carry its memories'
other passages, up to 118 tokens a memory: at 4,096 it grew from about 347 tokens to 596,
new every turn, and the share rose to 26% (the turns that break at the Memories evaluated
603 tokens, then 850, counted with smollm2); with the world moving, 30%. Since then a new
automatic Story Summary waits for a turn that evaluates the whole history anyway, a drop of
the history stands when the cards heading it are rebuilt smaller (those turns had broken
the prefix twice), and a memory's passage whose action the history holds is not written
again: 26% moving, 25% still, the mean evaluated 1,751 → about 1,190 tokens (scripted,
4,096; on seeds 7 and 31, which nothing was tried on, 26% and 27% moving, 25% and 27%
still). Tried and not kept (2026-12-06, scripted, `cache` 4,096, moving): a steady Memories
section, the previous prompt's memories kept in their order with their passages unless
something new beats them by a margin. The memories a turn's ranking chooses change on
nearly every turn of this game. Kept only while the fresh choice held no memory the
section lacked, the section stood on 3 to 8 of 54 turns (share 0.257 → 0.258–0.260). Kept
unless a new memory's fused score was twice the best kept one's (or a passage beat the best
kept one's score by 0.5), it stood on 37 of 54 (0.251), but the dense recall set fell from
0.92 to 0.53 (tune) and 0.96 to 0.46 (held out), and real writing from 0.40 to 0.29 and
0.42 to 0.30: the question's memory was left out. Kept whatever came (a bound): 50 of 54,
0.236, the section still moving whenever it was more than 8 actions back. So withholding
the fresh choice cannot pay; what could is adding a turn's new memories after the kept
ones, as the Story Cards add the cards fired since. Tried next and not kept either (the
same day): that addition. The Memories section a prompt held stayed where it was, byte for
byte, while its memories were still true on the path (and, on a turn addressing someone,
while they were in on all of them); what the turn retrieved that it lacked, the held
memories' new passages with it, went in a section of its own before the player's action.
Median shares, seed 19 (tuned on) and seeds 7 and 31 (held out), against 0.255, 0.267 and
0.273 without it: 0.258, 0.253 and 0.274 (mean 0.385 → 0.383 on seed 19). The section held
on 23 of 60 turns; on 12 others the new section would have pushed the history past its room
(a drop of the history evaluates all of it again), so those were built fresh, and a fresh
section after held turns takes every turn since with it (0.30–0.43 of the prompt). Leaving
out the lowest ranked new memories until they fit reached 0.239, 0.211 and 0.241 (0.232,
0.179 and 0.204 with the new section capped at half the Memories' budget), but on the dense
recall set the answer then reached the prompt for 0.50 of the tune questions, not 0.92: a
question about something new retrieves memories the held section lacks, and there is no
room for them. Leaving out only their passages, or holding only when one or two memories
were new: 0.259–0.276, no gain. The room a new section needs is the history's, and the
history is full on most turns. Tried and not kept (2026-12-07): a memory's passages on one
line under one "from the story:" lead, joined by " … ", about 28 tokens a turn fewer for
the same passages. The Memories fill their budget, so the room went to more passages (10.8
to 12.2 a turn) and the share did not fall (0.257, 0.265, 0.288 on seeds 19, 7, 31). With
the ceiling lowered from 118 to 105 tokens a memory as well (about the passages a turn as
before, 10.2), 0.248, 0.247 and 0.262; but on real writing at 4,096
(`benchmarks.recall.real.run --context 4096`) the answer reached the prompt at top 5 for
0.46 of the tune questions and 0.46 of the held-out ones, against 0.50 and 0.50 (top 10:
0.54 and 0.50, against 0.53 and 0.50), in 534 Memories tokens against 596.
Insights' count is SmolLM2's for `embedded`,
cl100k for `server`; *share* is the `cache` game's evaluated/prompt median, *llama.cpp* what
the model said it evaluated there.

| narrator, context | evaluated, classic → cache | p95 | first token ms | p95 | share | llama.cpp |
|---|---:|---:|---:|---:|---:|---:|
| embedded 2,048 | 1,082 → 836 | 1,437 → 1,247 | 5,589 → 3,796 | 6,761 → 5,756 | 60% | 813 |
| embedded 4,096 | 3,169 → 812 | 3,539 → 3,151 | 18,041 → 5,931 | 20,239 → 18,296 | 23% | 801 |
| server 2,048 | 1,261 → 953 | 1,611 → 1,477 | 5,755 → 4,397 | 6,846 → 6,446 | 63% | 929 |
| server 4,096 | 3,302 → 664 | 3,653 → 3,314 | 20,561 → 5,071 | 22,397 → 19,956 | 21% | 661 |"""


def _pct(value: float) -> str:
    return f"{100 * value:.0f}%"


def _game(s: Summary) -> str:
    """The game's world and library, after its narrator, layout and size."""
    library = " + library" if s.library else ""
    return f"{s.context_tokens:,}{library}, {s.world}"


def _label(s: Summary) -> str:
    return f"{s.narrator} {s.layout} {_game(s)}"


def _from(s: Summary) -> str:
    return f"{s.steady} ({s.first_overflow})" if s.first_overflow else f"{s.steady} (none)*"


def _ms(f: Figures) -> str:
    return f"{f.median:,.0f} | {f.p95:,.0f}"


def _setting(run: dict[str, Any]) -> str:
    setting = ["Plot Essentials", "a persona"]
    if run.get("authors_note", True):
        setting.append("an Author's Note")
    if run.get("cards", True):
        setting.append("a story card per member of a cast of twenty")
    libraries = run.get("knowledge", [False])
    if libraries == [True]:
        setting.append("a setting bible in the knowledge library")
    elif libraries == [False]:
        setting.append("no knowledge library")
    else:
        setting.append(
            "no knowledge library (rows marked `+ library` have a setting bible attached)"
        )
    return ", ".join(setting)


def _intro(run: dict[str, Any]) -> list[str]:
    real = [n for n in run.get("narrators", ["scripted"]) if n in REAL]
    lines = [
        f"Each game plays the same generated story (seed {run['seed']}, {run['turns']} turns: "
        f"a player's action and a 120-200-token narration each, with {_setting(run)}) "
        "through the product's `TurnRunner` on a fresh runtime (the benchmark kit's player), "
        "the memory worker's passes (extractive) run to the end between turns; embeddings "
        f"{run['embedder']}. `{BEFORE}` is the context layout before there was a choice "
        f"(every section above the history), `{AFTER}` the default "
        "(`TALEKEEPER_CONTEXT_LAYOUT`, see docs/context.md).",
        "",
        "Worlds: in the `moving` one the story changes what the world's rules read, in plain "
        'sentences that open a narration ("You walk into Hollow Fen.", "Maren Tull is '
        'waiting for you.", "You pick up the brass lantern.", "Ilse Dray leaves.", "The next '
        'morning, ..."): a new place and its two people every 3-7 turns, something taken, put '
        "down or handed over or someone leaving on about a third of the other turns, the "
        "clock every 8-12 turns; so the Current state section says something and changes "
        "now and then, as in real play. The `still` world is the same story without those "
        "sentences: the rules read nothing the state shows (a telling at most), and the "
        "section stays empty.",
        "",
        "Narrators: `scripted` is the kit's model double at the endpoint, scripted with the "
        "turn's narration: it answers at once, so its figures are the product's counts "
        "alone (cl100k, an endpoint's tokenizer). `embedded` is the app's in-process "
        "SmolLM2-135M (llama-cpp-python); `server` the same model behind `python -m "
        "llama_cpp.server`, started for each game with `--n_ctx` the context size. A real "
        "narrator is asked every turn, its reply capped at "
        f"{run.get('reply_cap', 32)} tokens (the context still reserves the product's reply "
        "length), but the reply stored is the script's narration, handed on when the "
        "model's first token comes: every game plays the same turns.",
        "",
        "Evaluated tokens are Insights' `tokens.prompt_evaluated`: the prompt after the "
        "prefix it shares with the previous prompt to the same model, counted with the "
        "narrator's tokenizer; the same count is made here on the prompt text sent, and the "
        "turns where the two agree are counted below"
        + (
            "; *llama.cpp* is what the model says it evaluated (the in-process narrator's "
            "performance counters, the server's timing lines)"
            if real
            else ""
        )
        + ". Figures over the steady-state turns: those after the turn on which the history "
        "first overflowed (* none did: every turn after the first, a sample only).",
        "",
        f"{run.get('cores') or '?'} cores ({run.get('cpu', 'unknown CPU')}); "
        f"{run.get('llama', 'llama.cpp build unknown')}. {run['footer']}",
    ]
    return lines + [f"Note: {note}." for note in run.get("notes", [])]


def _headline(summaries: list[Summary], tokenizers: list[str]) -> list[str]:
    """The share evaluated, median over the steady turns, by game and world."""
    worlds = list(dict.fromkeys(s.world for s in summaries))
    keys = list(
        dict.fromkeys((s.narrator, s.layout, s.context_tokens, s.library) for s in summaries)
    )
    counts = ["Insights", *tokenizers]
    head = " | ".join(f"{w}: {c}" for w in worlds for c in counts)
    lines = [
        "",
        "The share of each prompt the narrator evaluated (median over the steady turns; "
        "Insights' count, and the same prompts counted with "
        + (", ".join(tokenizers) or "no other tokenizer")
        + "):",
        "",
        f"| narrator, layout, context | {head} |",
        "|---|" + "---:|" * (len(worlds) * len(counts)),
    ]
    for narrator, lay, context, library in keys:
        cells = []
        for w in worlds:
            s = next(
                (
                    t
                    for t in summaries
                    if (t.narrator, t.layout, t.context_tokens, t.library, t.world)
                    == (narrator, lay, context, library, w)
                ),
                None,
            )
            for c in counts:
                if s is None:
                    cells.append("–")
                elif c == "Insights":
                    cells.append(_pct(s.share.median))
                else:
                    o = s.others.get(c)
                    cells.append(_pct(o["share"].median) if o else "–")
        name = f"{narrator} {lay} {context:,}{' + library' if library else ''}"
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return lines


def _target(summaries: list[Summary]) -> list[str]:
    """Whether the bar is met, by each narrator that played its game."""
    games = [
        s
        for s in summaries
        if (s.layout, s.context_tokens, s.world, s.library)
        == (AFTER, TARGET_CONTEXT, "moving", False)
    ]
    if not games:
        return []
    return [
        "",
        *(
            f"Target: `{AFTER}` at {TARGET_CONTEXT:,} tokens, moving world, evaluates at most "
            f"{_pct(TARGET)} of the prompt (median, Insights' count): {s.narrator} "
            f"{_pct(s.share.median)} ({s.share.median:.3f}), "
            f"**{'met' if s.share.median <= TARGET else 'not met'}**."
            for s in games
        ),
    ]


def _before_after(summaries: list[Summary]) -> list[str]:
    """classic → cache per narrator, context size and world, where both were played."""
    pairs = []
    for s in summaries:
        if s.layout != BEFORE:
            continue
        after = next(
            (
                t
                for t in summaries
                if t.layout == AFTER
                and (t.narrator, t.context_tokens, t.library, t.world)
                == (s.narrator, s.context_tokens, s.library, s.world)
            ),
            None,
        )
        if after is not None:
            pairs.append((s, after))
    if not pairs:
        return []

    def cell(a: float, b: float) -> str:
        change = f" ({(b - a) / a:+.0%})" if a else ""
        return f"{a:,.0f} → {b:,.0f}{change}"

    def row(a: Summary, b: Summary, get: Callable[[Summary], Figures]) -> str:
        return f"{cell(get(a).median, get(b).median)} | {cell(get(a).p95, get(b).p95)}"

    lines = [
        "",
        f"Before (`{BEFORE}`) → after (`{AFTER}`), medians and p95 over the steady turns:",
        "",
        "| narrator, context, world | evaluated tokens | p95 | first token ms | p95 "
        "| turn ms | p95 |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for a, b in pairs:
        lines.append(
            f"| {a.narrator} {_game(a)} | {row(a, b, lambda s: s.evaluated)} "
            f"| {row(a, b, lambda s: s.first_token_ms)} | {row(a, b, lambda s: s.turn_ms)} |"
        )
    return lines


def _games(summaries: list[Summary]) -> list[str]:
    lines = [
        "",
        "Every game:",
        "",
        "| narrator, layout, context, world | turns measured (overflow) "
        "| evaluated/prompt median | p95 | evaluated median | p95 | mean | llama.cpp median "
        "| prompt median | history kept | first token ms median | p95 | turn ms median | p95 |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for s in summaries:
        model = f"{s.model_evaluated.median:,.0f}" if s.model_evaluated else "–"
        lines.append(
            f"| {_label(s)} | {_from(s)} | {_pct(s.share.median)} | {_pct(s.share.p95)} "
            f"| {s.evaluated.median:,.0f} | {s.evaluated.p95:,.0f} | {s.evaluated.mean:,.0f} "
            f"| {model} | {s.prompt.median:,.0f} | {s.history_kept:.0f} "
            f"| {_ms(s.first_token_ms)} | {_ms(s.turn_ms)} |"
        )
    return lines


def _others(summaries: list[Summary], tokenizers: list[str]) -> list[str]:
    lines: list[str] = []
    for name in tokenizers:
        lines += [
            "",
            f"The same prompts counted with {name}:",
            "",
            "| narrator, layout, context, world | evaluated/prompt median | p95 "
            "| evaluated median | p95 |",
            "|---|---:|---:|---:|---:|",
        ]
        for s in summaries:
            o = s.others.get(name)
            if o:
                lines.append(
                    f"| {_label(s)} | {_pct(o['share'].median)} | {_pct(o['share'].p95)} "
                    f"| {o['evaluated'].median:,.0f} | {o['evaluated'].p95:,.0f} |"
                )
    return lines


def markdown(summaries: list[Summary], run: dict[str, Any]) -> str:
    tokenizers: list[str] = list(run.get("tokenizers", []))
    lines = _intro(run)
    lines += _headline(summaries, tokenizers)
    lines += _target(summaries)
    if run.get("plot"):
        lines += [
            "",
            f"![Tokens evaluated per turn, {BEFORE} and {AFTER}, by narrator]({run['plot']})",
        ]
    lines += _before_after(summaries)
    lines += _games(summaries)
    lines += _others(summaries, tokenizers)
    lines += _causes(summaries)
    if not any(n in REAL for n in run.get("narrators", [])):
        lines += ["", HISTORY]
    return "\n".join(lines)


def _causes(summaries: list[Summary]) -> list[str]:
    causes = [c for c in layout.CAUSES if any(c in s.causes for s in summaries)]
    head = "| {} | " + " | ".join(_label(s) for s in summaries) + " |"
    rule = "|---|" + "---:|" * len(summaries)
    lines = [
        "",
        "Why the prefix broke: the first section that differs from the previous turn's "
        "(turns, share of the steady turns, median tokens evaluated on them):",
        "",
        head.format("first difference"),
        rule,
    ]
    for cause in causes:
        cells = []
        for s in summaries:
            c = s.causes.get(cause)
            cells.append(f"{c.turns} ({_pct(c.share)}, {c.evaluated_median:,.0f})" if c else "–")
        lines.append(f"| {cause} | " + " | ".join(cells) + " |")
    names = [
        n
        for n in (*layout.SECTIONS, *layout.HISTORY_CAUSES)
        if any(n in s.changed or n in s.moved for s in summaries)
    ]
    lines += [
        "",
        "How often each part changed at all (its text; in brackets, same text moved "
        "elsewhere among the actions):",
        "",
        head.format("part"),
        rule,
    ]
    for name in names:
        cells = [
            _pct(s.changed.get(name, 0.0))
            + (f" ({_pct(s.moved[name])})" if s.moved.get(name) else "")
            for s in summaries
        ]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    parts = [*layout.SECTIONS, layout.HISTORY, layout.ACTION]
    lines += [
        "",
        "Median tokens of each section (as the budget counts them):",
        "",
        "| narrator, layout, context, world | " + " | ".join(parts) + " |",
        "|---|" + "---:|" * len(parts),
        *(
            f"| {_label(s)} | " + " | ".join(f"{s.tokens.get(n, 0):,.0f}" for n in parts) + " |"
            for s in summaries
        ),
        "",
        "Steady turns whose context held: "
        + "; ".join(
            f"{_label(s)}: " + ", ".join(f"{k} {_pct(v)}" for k, v in s.held.items())
            for s in summaries
        )
        + ".",
        "The first differing character of the prompt text lies in the section named on "
        + "; ".join(f"{s.classifier_agrees}/{s.steady} ({_label(s)})" for s in summaries)
        + " steady turns.",
        "Insights' count of what was evaluated is the one made here on the prompt sent on "
        + "; ".join(f"{s.counted_alike}/{s.steady} ({_label(s)})" for s in summaries)
        + " steady turns.",
    ]
    return lines


# -- the plot ----------------------------------------------------------------------------------


def draw(summaries: list[Summary], games: list[list[TurnRecord]], path: Path) -> bool:
    """Tokens evaluated per turn under each layout and world at the largest context
    played, one column per narrator, with a real narrator's first-token time below; False
    when nothing was played."""
    if not summaries:
        return False
    context = max(s.context_tokens for s in summaries)
    chosen = [
        (s, records)
        for s, records in zip(summaries, games, strict=True)
        if s.context_tokens == context
    ]
    names = list(dict.fromkeys(s.narrator for s, _ in chosen))
    real = any(n in REAL for n in names)
    plt = pyplot()
    rows = 2 if real else 1
    fig, axes = plt.subplots(
        rows, len(names), figsize=(5.6 * len(names), 3.6 * rows), squeeze=False, sharex=True
    )
    for column, narrator in enumerate(names):
        top = axes[0][column]
        for s, records in chosen:
            if s.narrator != narrator:
                continue
            turns = [r.turn for r in records]
            label = f"{s.layout}, {s.world}" + (" + library" if s.library else "")
            (line,) = top.plot(
                turns,
                [r.evaluated for r in records],
                label=label,
                lw=1.2,
                ls="--" if s.world == "still" or s.library else "-",
            )
            if s.first_overflow:
                top.axvline(s.first_overflow, color=line.get_color(), ls=":", lw=0.8)
            if rows == 2 and narrator in REAL:
                ttft = [r.first_token_ms or 0.0 for r in records]
                axes[1][column].plot(turns, ttft, label=label, lw=1.2)
        top.set_title(f"{narrator}, {context:,}-token context")
        top.set_ylabel("tokens evaluated")
        top.set_ylim(bottom=0)
        top.legend(fontsize=8)
        if rows == 2:
            bottom = axes[1][column]
            if narrator in REAL:
                bottom.set_ylabel("first token, ms")
                bottom.set_ylim(bottom=0)
                bottom.legend(fontsize=8)
                bottom.set_xlabel("turn")
            else:
                bottom.axis("off")
        else:
            top.set_xlabel("turn")
    fig.suptitle("Evaluated per turn (dotted: the history first overflowed)", fontsize=10)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True
