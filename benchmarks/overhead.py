"""Turn overhead: everything a turn costs but the model, by story length, bank size and cards.

Each story has its own ``Runtime`` (a migrated SQLite file, the memory worker not started)
and is bulk-inserted, not played, with world events as the rules would have read them (one
every ``EVENT_EVERY`` actions: a turn folds every event of its path). Its turns go through
the real ``TurnRunner`` as the web app drives them, every model a ``ZeroProvider``; the
stories take turns round-robin, so that a busy moment on the machine falls on all of them
alike.

    .venv/bin/python -m benchmarks.overhead [--write docs/benchmarks.md]

``--write`` also draws ``benchmarks/overhead.png`` next to the Markdown file.
"""

from __future__ import annotations

import asyncio
import gc
import json
import random
import statistics
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from benchmarks.kit.providers import memory_row, unit_vector, zero_models
from benchmarks.kit.report import Clock, arguments, publish, pyplot
from sqlalchemy import insert, select
from sqlalchemy.orm import Session

from talekeeper.bootstrap import Runtime
from talekeeper.services.cards.rules import CardMatcher
from talekeeper.services.endpoints.models import ModelSet
from talekeeper.services.story import adventures
from talekeeper.settings import DEFAULT_CONTEXT_TOKENS, load_settings
from talekeeper.storage.db import session_scope
from talekeeper.storage.models import Action, Branch, Memory, StoryCard, WorldEntity, WorldEvent

SIZES = (100, 300, 1_000, 3_000, 10_000)
BANKS = (25, 200, 1_000, 5_000)  # active memories, over a story of BANK_STORY actions
BANK_STORY = 1_000
CARDS = (200, 2_000, 5_000)  # story cards of CARD_KEYWORDS keywords, over a BANK_STORY story
CARD_KEYWORDS = 30
CARD_FIRES_EVERY = 100  # one card in this many has a keyword the story uses
FORK_SIZE = 10_000  # the story that carries a fork
FORK_TAIL = 100  # the fork's own actions: the last FORK_TAIL depths of the path
BANK_CAPACITY = 200  # the default capacity: the active memories a turn ranks
# A world event every this many actions, on a narration: a new place every few turns and
# something taken or put down on about a third of the others (the prefix study's moving
# world) is about one a turn of two actions; this is half that.
EVENT_EVERY = 4
WORLD_PLACES, WORLD_ITEMS = 20, 40
TURNS = 200
WARMUP = 10
SEED = 7
TARGET_MS = 10.0
TARGET_SIZE = 1_000
SCENARIO = "lantern-coast"
TIMINGS = ("read_ms", "retrieve_ms", "build_ms", "generate_ms", "save_ms")
PARTS = ("begin_ms", *TIMINGS)  # the columns of "where the time goes"
PLOT = "overhead.png"
PANELS = {  # each series' x axis and title in the plot
    "story": ("story length (actions)", f"By story length (bank ≤ {BANK_CAPACITY} active)"),
    "bank": ("active memories in the bank", "By bank size ({:,}-action story)"),
    "cards": (f"story cards ({CARD_KEYWORDS} keywords each)", "By story cards ({:,}-action story)"),
}
COMMAND = ".venv/bin/python -m benchmarks.overhead --write docs/benchmarks.md"


_VOCABULARY = (
    "the lantern tide harbor salt fog rope bell keeper widow gull pier cliff boat oar "
    "shadow light wind storm lamp stair door ledger coin net hook wave rock shore night "
    "old quiet cold slow bright broken wet heavy distant"
)
_WORDS = tuple(_VOCABULARY.split())
_NAMES = ("Maren", "Alric", "Vane", "Pip", "Haddow", "the Salt Widow", "Keeper Vane")
_VERBS = ("climb", "open", "follow", "search", "light", "ask", "listen to", "wait by", "pull")


# -- the story ---------------------------------------------------------------------------------


def player_text(rng: random.Random) -> str:
    """About 60 characters: what a player types."""
    target = rng.choice(_NAMES + _WORDS[:12])
    text = f"I {rng.choice(_VERBS)} {target} and look toward the {rng.choice(_WORDS)}"
    while len(text) < 55:
        text += f" {rng.choice(_WORDS)}"
    return text[:70]


def narration_text(rng: random.Random) -> str:
    """About 600 characters: a narrator's paragraph of sentences of 7 to 13 words."""
    parts: list[str] = []
    while sum(len(p) + 1 for p in parts) < 560:
        words = rng.sample(_WORDS, rng.randint(7, 13))
        if rng.random() < 0.3:
            words.insert(rng.randrange(len(words)), rng.choice(_NAMES))
        text = " ".join(words)
        parts.append(text[0].upper() + text[1:] + rng.choice((".", ".", ".", "!", "?")))
    return " ".join(parts)


def _actions(
    session: Session, rng: random.Random, adventure_id: int, branch_id: int, depths: range
) -> None:
    """Player actions at odd depths, narrations at even ones, in one executemany."""
    rows = [
        {
            "adventure_id": adventure_id,
            "branch_id": branch_id,
            "depth": depth,
            "type": "do" if depth % 2 else "narration",
            "text": player_text(rng) if depth % 2 else narration_text(rng),
        }
        for depth in depths
    ]
    session.execute(insert(Action), rows)


def _world(session: Session, rng: random.Random, adventure_id: int) -> None:
    """Places and items, and an event on every ``EVENT_EVERY``-th action (a narration):
    going to a place, or taking or putting down a thing, with its sentence."""
    entities = [
        WorldEntity(adventure_id=adventure_id, kind=kind, name=f"the {word} {n}", key=f"{word} {n}")
        for kind, word, count in (("place", "cove", WORLD_PLACES), ("item", "lamp", WORLD_ITEMS))
        for n in range(count)
    ]
    session.add_all(entities)
    session.flush()
    places, items = entities[:WORLD_PLACES], entities[WORLD_PLACES:]
    query = select(Action.id, Action.branch_id, Action.depth).where(
        Action.adventure_id == adventure_id, Action.depth % EVENT_EVERY == 0, Action.depth > 0
    )
    rows = []
    for action_id, branch_id, depth in session.execute(query):
        kind = rng.choice(("moved", "took", "dropped"))
        thing = rng.choice(places if kind == "moved" else items)
        said = {"moved": "You walk into", "took": "You pick up", "dropped": "You put down"}[kind]
        rows.append(
            {
                "adventure_id": adventure_id,
                "action_id": action_id,
                "branch_id": branch_id,
                "depth": depth,
                "kind": kind,
                "object_id": thing.id,
                "origin": "rules",
                "evidence": f"{said} {thing.name}.",
            }
        )
    if rows:
        session.execute(insert(WorldEvent), rows)


def populate(rt: Runtime, uid: int, r: SizeResult, rng: random.Random) -> int:
    """An adventure from the scenario with ``r.size`` actions after its opening, its bank
    (``_blocks``) and ``r.cards`` story cards, in one transaction; its id. Sets
    ``r.build_ms`` when there are cards."""
    with session_scope(rt.sessions) as session:
        story = adventures.create(session, uid, {}, rt.memory, rt.scenario(SCENARIO))
        adventure, root = story.adventure, story.branch.id
        _actions(session, rng, adventure.id, root, range(1, r.size + 1))
        if r.size == FORK_SIZE:
            fork_at = r.size - FORK_TAIL
            forked_from = session.scalar(
                select(Action.id).where(Action.branch_id == root, Action.depth == fork_at)
            )
            branch = Branch(
                adventure_id=adventure.id,
                parent_id=root,
                fork_depth=fork_at + 1,
                forked_from_action_id=forked_from,
                name="Fork",
            )
            session.add(branch)
            session.flush()
            adventure.current_branch_id = branch.id
            _actions(session, rng, adventure.id, branch.id, range(fork_at + 1, r.size + 1))
        _world(session, rng, adventure.id)
        _bank(session, rng, adventure.id, root, _blocks(r.size, r.bank))
        if r.cards:
            cards = card_rows(adventure.id, r.cards, rng)
            session.execute(insert(StoryCard), cards)
            r.build_ms = matcher_build_ms(cards)
        return adventure.id


def card_rows(adventure_id: int, count: int, rng: random.Random) -> list[dict[str, Any]]:
    """``count`` cards of ``CARD_KEYWORDS`` keywords each: invented names and two-word
    phrases the story never uses, except that one card in ``CARD_FIRES_EVERY`` also has a
    word of the story (so a few fire on every turn, as in a real lorebook)."""
    syllables = ("ka", "ri", "mo", "ta", "le", "su", "ne", "vi", "ro", "da", "po", "lin", "eth")

    def name() -> str:
        return "".join(rng.choice(syllables) for _ in range(3)) + str(rng.randrange(10_000))

    rows = []
    for i in range(count):
        keywords = [name() if k % 2 else f"{name()} {name()}" for k in range(CARD_KEYWORDS)]
        if i % CARD_FIRES_EVERY == 0:
            keywords[-1] = rng.choice(_WORDS)
        rows.append(
            {
                "adventure_id": adventure_id,
                "name": f"Card {i}",
                "type": "other",
                "keywords": json.dumps(keywords),
                "entry": f"Card {i}: " + " ".join(rng.choice(_WORDS) for _ in range(12)),
            }
        )
    return rows


def matcher_build_ms(rows: list[dict[str, Any]]) -> float:
    """The time to build the matcher of a card set, as a turn does after any card changed."""
    cards = [(i, tuple(json.loads(r["keywords"]))) for i, r in enumerate(rows, 1)]
    started = time.perf_counter()
    CardMatcher(cards)
    return (time.perf_counter() - started) * 1000


def _blocks(size: int, bank: int | None) -> tuple[list[tuple[int, int]], int]:
    """Source ranges on the main branch and how many of the oldest are forgotten: one
    block of 6 per 6 actions, the newest ``BANK_CAPACITY`` active; or ``bank`` active
    ranges of 6 spread evenly over the story (overlapping when there are more than blocks)."""
    if bank is None:
        blocks = [(start, start + 5) for start in range(1, size - 6, 6)]
        return blocks, max(0, len(blocks) - BANK_CAPACITY)
    span = size - 7
    return [(1 + i * span // bank, 6 + i * span // bank) for i in range(bank)], 0


def _bank(
    session: Session,
    rng: random.Random,
    adventure_id: int,
    branch_id: int,
    plan: tuple[list[tuple[int, int]], int],
) -> None:
    """A Memory Bank as the memory pass would have left it: a memory per source range of
    ``plan`` on the main branch, all but its forgotten ones active, each with a vector."""
    blocks, forgotten = plan
    vrng = np.random.default_rng(rng.randrange(2**32))
    rows = [
        memory_row(
            f"{rng.choice(_NAMES)} " + " ".join(rng.choice(_WORDS) for _ in range(14)) + ".",
            unit_vector(vrng),
            block,
            adventure_id=adventure_id,
            branch_id=branch_id,
            vector_model="zero-embed",
            writer="extractive",
            status="forgotten" if i < forgotten else "active",
            revision=i + 1,
        )
        for i, block in enumerate(blocks)
    ]
    if rows:
        session.execute(insert(Memory), rows)


# -- timing ------------------------------------------------------------------------------------


@dataclass
class SizeResult:
    """One story to time (its length, its bank: None for one memory per 6 actions, at most
    ``BANK_CAPACITY`` active; its story cards beyond the scenario's) and its timings."""

    size: int
    bank: int | None = None
    cards: int = 0
    build_ms: float | None = None  # the card set's matcher, built once
    totals: list[float] = field(default_factory=list)  # begin to the reply event
    cpu: list[float] = field(default_factory=list)  # the process's CPU time, all threads
    timings: dict[str, list[float]] = field(default_factory=lambda: {k: [] for k in PARTS})
    history_read: list[int] = field(default_factory=list)

    @property
    def median(self) -> float:
        return statistics.median(self.totals)

    @property
    def p95(self) -> float:
        ordered = sorted(self.totals)
        return ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]

    def part(self, name: str) -> float:
        return statistics.median(self.timings[name])


@dataclass
class Bench:
    """One story: its own runtime (a fresh SQLite file), adventure and player texts."""

    rt: Runtime
    models: ModelSet
    uid: int
    adventure_id: int
    texts: list[str]
    result: SizeResult

    async def turn(self, index: int, timed: bool) -> None:
        """One turn as the web app drives it: ``begin`` in a worker thread, then ``run``."""
        runner, text = self.rt.turns, self.texts[index]
        cpu, started = time.process_time(), time.perf_counter()
        args = (self.adventure_id, self.uid, "do", text, self.models)
        pending = await asyncio.to_thread(runner.begin, *args)
        begun = time.perf_counter()
        reply: dict[str, Any] | None = None
        async for event in runner.run(pending, self.models):
            if event.kind == "reply":
                reply = event.data
            elif event.kind == "error":
                raise RuntimeError(f"turn failed: {event.data}")
        finished, cpu = time.perf_counter(), time.process_time() - cpu
        assert reply is not None
        if not timed:
            return
        r, insights = self.result, reply["insights"]
        r.totals.append((finished - started) * 1000)
        r.cpu.append(cpu * 1000)
        r.timings["begin_ms"].append((begun - started) * 1000)
        for key in TIMINGS:
            r.timings[key].append(float(insights["timings"].get(key, 0.0)))
        r.history_read.append(insights["history"]["kept"] + insights["history"]["dropped"])


async def bench(cases: list[SizeResult], turns: int, warmup: int) -> list[SizeResult]:
    """Every story is built first; then the turns go round-robin over them."""
    benches: list[Bench] = []
    with tempfile.TemporaryDirectory(prefix="talekeeper-overhead-") as root:
        try:
            for n, case in enumerate(cases):
                rng = random.Random(SEED + case.size)
                rt = Runtime.build(load_settings({"TALEKEEPER_DATA_DIR": str(Path(root) / str(n))}))
                uid = rt.local_user_id()
                models = zero_models(rt, uid)
                adventure_id = populate(rt, uid, case, rng)
                texts = [player_text(rng) for _ in range(warmup + turns)]
                benches.append(Bench(rt, models, uid, adventure_id, texts, case))
            gc.collect()
            for index in range(warmup + turns):
                for b in benches:
                    await b.turn(index, timed=index >= warmup)
            return cases
        finally:
            for b in benches:
                await b.rt.aclose()


# -- the report --------------------------------------------------------------------------------


def _tables(title: str, rows: list[tuple[str, SizeResult]]) -> list[str]:
    return [
        f"| {title} | median | p95 | mean | CPU (median) | history rows read |",
        "|---:|---:|---:|---:|---:|---:|",
        *(
            f"| {label} | {r.median:.2f} ms | {r.p95:.2f} ms | {statistics.fmean(r.totals):.2f} ms "
            f"| {statistics.median(r.cpu):.2f} ms | {statistics.median(r.history_read):.0f} |"
            for label, r in rows
        ),
        "",
        "Where the time goes (medians in ms):",
        "",
        f"| {title} | " + " | ".join(p.removesuffix("_ms") for p in PARTS) + " |",
        "|---:|" + "---:|" * len(PARTS),
        *(
            f"| {label} | " + " | ".join(f"{r.part(p):.2f}" for p in PARTS) + " |"
            for label, r in rows
        ),
        "",
    ]


def series(
    results: list[SizeResult],
) -> tuple[list[SizeResult], list[SizeResult], list[SizeResult]]:
    """(the story-length series, the bank-size series, the story-cards series)."""
    return (
        [r for r in results if r.bank is None and not r.cards],
        [r for r in results if r.bank is not None],
        [r for r in results if r.cards],
    )


def markdown(
    results: list[SizeResult], turns: int, warmup: int, clock: Clock, plot: str | None = None
) -> str:
    stories, banks, cards = series(results)
    by_size = {r.size: r for r in stories}
    lines = [
        "Wall time per turn of everything but the model: `begin` (the player's action saved) "
        "then `run` (read, retrieval, context build, a zero-latency provider streaming a fixed "
        "~130-token reply through `LoggedModel` with its AI call record, save with the "
        "Insights snapshot), driven through the real `TurnRunner` as the web app drives it, on "
        f"a migrated SQLite file. Each story is the `{SCENARIO}` scenario plus N bulk-inserted "
        "actions (~60-character player actions alternating with ~600-character narrations), "
        f"with a world event on every {EVENT_EVERY}th action as the rules would have read it "
        f"(going to one of {WORLD_PLACES} places, taking or putting down one of {WORLD_ITEMS} "
        "things), since each turn folds every event of its path; "
        f"the {FORK_SIZE:,}-action story ends on a fork, so its path has two lineage entries. "
        f"{turns} timed turns per story after {warmup} warm-up turns, the stories taking turns "
        f"round-robin; {DEFAULT_CONTEXT_TOKENS}-token context, cl100k token counting. Each "
        "turn embeds its query (at zero latency) and ranks the bank; the background worker is "
        "not running (the turn only records the job). `begin` is measured around "
        "`TurnRunner.begin`; the other parts are the timings each turn's Insights snapshot "
        "records; `generate` is the AI call record's write, the model taking no time. "
        + clock.footer(),
        "",
    ]
    if stories:
        lines += [
            "### By story length",
            "",
            f"A bank of one memory per 6 actions, at most {BANK_CAPACITY} active (the "
            "default capacity; the older ones forgotten, as eviction leaves them).",
            "",
            *_tables("story (actions)", [(f"{r.size:,}", r) for r in stories]),
        ]
    if banks:
        lines += [
            "### By bank size",
            "",
            f"A {banks[0].size:,}-action story whose bank holds N active memories, spread "
            "evenly over it (above one per block of 6 their sources overlap, as a raised "
            "capacity, an imported bank or hand-written memories give).",
            "",
            *_tables("active memories", [(f"{r.bank:,}", r) for r in banks]),
        ]
    if cards:
        lines += [
            "### By story cards",
            "",
            f"A {cards[0].size:,}-action story with N story cards of {CARD_KEYWORDS} keywords "
            "each (invented names, half of them two-word phrases; one card in "
            f"{CARD_FIRES_EVERY} also has a word of the story, so a few fire every turn). The "
            "card set's matcher is built by the first turn after any change to the cards, "
            "then kept: the build time is that turn's extra cost.",
            "",
            *_tables("story cards", [(f"{r.cards:,}", r) for r in cards]),
            "| story cards | keywords | matcher build |",
            "|---:|---:|---:|",
            *(
                f"| {r.cards:,} | {r.cards * CARD_KEYWORDS:,} | {r.build_ms or 0:.0f} ms |"
                for r in cards
            ),
            "",
        ]
    if plot:
        lines += [f"![Turn overhead by story length, bank size and story cards]({plot})", ""]
    target = by_size.get(TARGET_SIZE)
    if target is not None:
        met = "met" if target.median <= TARGET_MS else "missed"
        lines.append(
            f"Target (median ≤ {TARGET_MS:g} ms at {TARGET_SIZE:,} actions): **{met}** "
            f"({target.median:.2f} ms)."
        )
        if target.median > TARGET_MS:
            lines += [
                "",
                f"Missed by {target.median - TARGET_MS:.1f} ms; the notes below say where "
                "the time goes and what is next.",
            ]
        lines.append("")
    big = by_size.get(10_000)
    if target is not None and big is not None:
        lines.append(
            f"Growth from 1,000 to 10,000 actions: ×{big.median / target.median:.2f} in the "
            "median (a cost linear in the story would be ×10)."
        )
    if len(banks) > 1:
        low, high = banks[0], banks[-1]
        lines.append(
            f"From {low.bank:,} to {high.bank:,} active memories: ×"
            f"{high.median / low.median:.2f} in the median (retrieval "
            f"{low.part('retrieve_ms'):.2f} → {high.part('retrieve_ms'):.2f} ms)."
        )
    return "\n".join(lines)


def draw(results: list[SizeResult], path: Path) -> None:
    """Median, p95 and retrieval per turn against each series' variable, log scales."""
    plt = pyplot()
    stories, banks, cards = series(results)
    panels = [(p, s) for p, s in (("story", stories), ("bank", banks), ("cards", cards)) if s]
    fig, axes = plt.subplots(1, len(panels), figsize=(5.2 * len(panels), 3.8), squeeze=False)
    for ax, (kind, rs) in zip(axes[0], panels, strict=True):
        xs = [{"story": r.size, "bank": r.bank, "cards": r.cards}[kind] for r in rs]
        ax.plot(xs, [r.median for r in rs], marker="o", label="median")
        ax.plot(xs, [r.p95 for r in rs], marker="s", linestyle=":", label="p95")
        ax.plot(xs, [r.part("retrieve_ms") for r in rs], marker="^", label="retrieval (median)")
        ax.axhline(TARGET_MS, color="grey", linestyle="--", linewidth=0.8, label="target")
        xlabel, title = PANELS[kind]
        ax.set(xscale="log", ylim=(0, None), ylabel="ms per turn, model excluded")
        ax.set(xlabel=xlabel, title=title.format(rs[0].size))
        ax.legend(fontsize=8)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    parser = arguments(__doc__.split("\n\n")[0])
    parser.add_argument("--turns", type=int, default=TURNS)
    parser.add_argument("--warmup", type=int, default=WARMUP)
    parser.add_argument("--sizes", type=int, nargs="*", default=list(SIZES))
    parser.add_argument("--banks", type=int, nargs="*", default=list(BANKS))
    parser.add_argument("--cards", type=int, nargs="*", default=list(CARDS))
    args = parser.parse_args(argv)
    cases = [SizeResult(size) for size in args.sizes]
    cases += [SizeResult(BANK_STORY, bank=n) for n in args.banks]
    cases += [SizeResult(BANK_STORY, cards=n) for n in args.cards]
    clock = Clock(COMMAND)
    results = asyncio.run(bench(cases, args.turns, args.warmup))
    clock.stop()
    plot, where = None, ""
    if args.write:
        draw(results, args.write.parent / "benchmarks" / PLOT)
        plot, where = f"benchmarks/{PLOT}", f", the plot in benchmarks/{PLOT} beside it"
    body = markdown(results, args.turns, args.warmup, clock, plot)
    publish(body, args.write, "overhead", "Turn overhead (zero-latency model)", where)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
