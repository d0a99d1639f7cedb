"""The prompt-prefix harness's report: the ``prefix`` section of ``docs/benchmarks.md`` and
its plot.

``markdown`` writes what was played and on what, the layouts side by side (``classic``, the
order before there was a choice, against ``cache``) per narrator and context size, each
game's figures in full, why the prefix broke and what each section did. ``draw`` plots the
tokens evaluated per turn (and a real narrator's first-token time) under each layout at
the largest context played, one column per narrator.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from benchmarks.prefix import layout
from benchmarks.prefix.narrators import REAL

from benchmarks.kit.report import pyplot

if TYPE_CHECKING:
    from benchmarks.prefix.game import TurnRecord
    from benchmarks.prefix.run import Figures, Summary

SECTION = "prefix"
TITLE = "Prompt prefix"
PLOT = "prefix.png"
BEFORE, AFTER = "classic", "cache"


def _pct(value: float) -> str:
    return f"{100 * value:.0f}%"


def _label(s: Summary) -> str:
    library = " + library" if s.library else ""
    return f"{s.narrator} {s.layout} {s.context_tokens:,}{library}"


def _from(s: Summary) -> str:
    return f"{s.steady} ({s.first_overflow})" if s.first_overflow else f"{s.steady} (none)*"


def _ms(f: Figures) -> str:
    return f"{f.median:,.0f} | {f.p95:,.0f}"


def _intro(summaries: list[Summary], run: dict[str, Any]) -> list[str]:
    real = [n for n in run.get("narrators", ["scripted"]) if n in REAL]
    setting = ["Plot Essentials", "a persona"]
    if run.get("authors_note", True):
        setting.append("an Author's Note")
    if run.get("cards", True):
        setting.append("a story card per member of a cast of twenty")
    libraries = run.get("knowledge", [True])
    libraries = libraries if isinstance(libraries, list) else [libraries]
    if libraries == [True]:
        setting.append("a setting bible in the knowledge library")
    elif libraries == [False]:
        setting.append("no knowledge library")
    else:
        setting.append(
            "no knowledge library (rows marked `+ library` have a setting bible attached)"
        )
    lines = [
        f"Each game plays the same generated story (seed {run['seed']}, {run['turns']} turns: "
        f"a player's action and a 120-200-token narration each, with {', '.join(setting)}"
        ") through the product's `TurnRunner` on a fresh "
        "runtime, the memory worker's passes (extractive) run to the end between turns; "
        f"embeddings {run['embedder']}. `{BEFORE}` is the context layout before there was a "
        f"choice (every section above the history), `{AFTER}` the new default "
        "(`TALEKEEPER_CONTEXT_LAYOUT`, see docs/context.md).",
        "",
        "Narrators: `scripted` answers at once, so its figures are the product's counts "
        "alone; `embedded` is the app's in-process SmolLM2-135M (llama-cpp-python); `server` "
        "the same model behind `python -m llama_cpp.server`, started for each game with "
        "`--n_ctx` the context size and the in-process narrator's threads. A real narrator "
        "is asked every turn, its reply capped at "
        f"{run.get('reply_cap', 32)} tokens (the context still reserves the product's reply "
        "length), but the reply stored is the script's narration, handed on when the model's "
        "first token comes: every game plays the same turns, and the time to the first token "
        "is the model's, as Insights measures it (`timings.first_token_ms`). The turn time "
        "runs from the player's action to the reply saved, the model's capped reply "
        "included, the memory passes after it not.",
        "",
        "Evaluated tokens are Insights' `tokens.prompt_evaluated`: the prompt after the "
        "prefix it shares with the previous prompt to the same model, counted with the "
        "narrator's tokenizer (cl100k for `scripted` and `server`, whose server reports no "
        "figure of its own; SmolLM2's for `embedded`)"
        + (
            "; *llama.cpp* is what the model says it evaluated (the in-process narrator's "
            "performance counters, the server's timing lines). The model's cache also holds "
            "the reply it generated, which the script's replaces, so its count can exceed "
            "the product's"
            if real
            else ""
        )
        + ". Figures over the steady-state turns: those after the turn on which the history "
        "first overflowed (* none did: every turn after the first, a sample only).",
        "",
        f"Measured on {run.get('cores') or '?'} cores ({run.get('cpu', 'unknown CPU')}), "
        f"{run['machine']}; {run.get('llama', 'llama.cpp build unknown')}. "
        + (
            f"Load average {run['load'][0]:.1f} before and {run['load'][1]:.1f} after the run, "
            if "load" in run
            else ""
        )
        + f"{run['seconds']:.0f} s in all"
        + (f" (`{run['command']}`)." if run.get("command") else "."),
    ]
    return lines + [f"Note: {note}." for note in run.get("notes", [])]


def _before_after(summaries: list[Summary]) -> list[str]:
    """classic → cache per narrator and context size, where both were played."""
    pairs = []
    for s in summaries:
        if s.layout != BEFORE:
            continue
        after = next(
            (
                t
                for t in summaries
                if t.layout == AFTER
                and t.narrator == s.narrator
                and t.context_tokens == s.context_tokens
                and t.library == s.library
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
        "| narrator, context | evaluated tokens | p95 | first token ms | p95 | turn ms | p95 |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for a, b in pairs:
        lines.append(
            f"| {a.narrator} {a.context_tokens:,}{' + library' if a.library else ''} "
            f"| {row(a, b, lambda s: s.evaluated)} "
            f"| {row(a, b, lambda s: s.first_token_ms)} | {row(a, b, lambda s: s.turn_ms)} |"
        )
    return lines


def markdown(summaries: list[Summary], run: dict[str, Any]) -> str:
    lines = _intro(summaries, run)
    if run.get("plot"):
        lines += [
            "",
            f"![Tokens evaluated per turn, {BEFORE} and {AFTER}, by narrator]({run['plot']})",
        ]
    lines += _before_after(summaries)
    lines += [
        "",
        "Every game:",
        "",
        "| narrator, layout, context | turns measured (overflow) | evaluated/prompt median "
        "| p95 | evaluated median | p95 | mean | llama.cpp median | prompt median "
        "| history kept | first token ms median | p95 | turn ms median | p95 |",
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
    for name in run["tokenizers"]:
        lines += [
            "",
            f"The same prompts counted with {name}:",
            "",
            "| narrator, layout, context | evaluated/prompt median | p95 | evaluated median "
            "| p95 |",
            "|---|---:|---:|---:|---:|",
        ]
        for s in summaries:
            o = s.others.get(name)
            if o:
                lines.append(
                    f"| {_label(s)} | {_pct(o['share'].median)} | {_pct(o['share'].p95)} "
                    f"| {o['evaluated'].median:,.0f} | {o['evaluated'].p95:,.0f} |"
                )
    lines += _causes(summaries)
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
        "| narrator, layout, context | " + " | ".join(parts) + " |",
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
    ]
    return lines


# -- the plot ----------------------------------------------------------------------------------


def draw(summaries: list[Summary], games: list[list[TurnRecord]], path: Path) -> bool:
    """Tokens evaluated per turn under each layout at the largest context played, one
    column per narrator, with a real narrator's first-token time below; False when nothing
    was played."""
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
        rows, len(names), figsize=(5.2 * len(names), 3.4 * rows), squeeze=False, sharex=True
    )
    for column, narrator in enumerate(names):
        top = axes[0][column]
        for s, records in chosen:
            if s.narrator != narrator:
                continue
            turns = [r.turn for r in records]
            label = f"{s.layout} + library" if s.library else s.layout
            (line,) = top.plot(
                turns,
                [r.evaluated for r in records],
                label=label,
                lw=1.2,
                ls="--" if s.library else "-",
            )
            if s.first_overflow:
                top.axvline(s.first_overflow, color=line.get_color(), ls=":", lw=0.8)
            if rows == 2 and narrator in REAL:
                ttft = [r.first_token_ms or 0.0 for r in records]
                axes[1][column].plot(turns, ttft, label=s.layout, lw=1.2)
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
