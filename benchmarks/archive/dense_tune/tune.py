"""Ranking rules compared offline on the dense set's frames (``frames.Frame``).

Playing a dense set takes minutes; ranking its probes again takes a second. So the
set is played once (``--collect``: the tune seed, or the seeds given), every probe's
frame is pickled, and each rule of ``RULES`` is replayed over the frames
(``frames.replay``: the same section, budget and evidence fitting as a turn), giving
*fact in prompt* at the product's top-k by probe kind. The product's own rule is
replayed too and must agree with the dry runs (the count of frames where it does not
is printed). Figures a rule was tuned on are the tune seed's; report held-out seeds
(``--collect --seeds 41 77``) apart. How the source is cut into passages
(``evidence.passages``) is fixed in the frames (their keys' vectors): a change there is
compared by collecting each variant's frames apart, not by a rule.

    .venv/bin/python -m benchmarks.recall.dense.tune --collect frames.pickle [--seeds 14]
    .venv/bin/python -m benchmarks.recall.dense.tune --frames frames.pickle
"""

from __future__ import annotations

import argparse
import asyncio
import pickle
import sys
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from benchmarks.recall.dense.frames import Frame, Rule, product_rule, replay
from benchmarks.recall.dense.generator import WINDOW
from benchmarks.recall.dense.play import play
from benchmarks.recall.dense.report import PROBE_KINDS
from benchmarks.recall.dense.run import TUNE_SEED, dense_set
from benchmarks.recall.generator import default_set
from benchmarks.recall.play import EMBEDDERS, player
from benchmarks.recall.play import play as play_planted
from benchmarks.recall.probe import leaving, measure

from talekeeper.core.tokens import BpeCounter
from talekeeper.services.memory.ranking import WEIGHTS, Ranking, rank
from talekeeper.services.memory.terms import terms
from talekeeper_testkit.double import ModelDouble


def weighted(**changes: Any) -> Rule:
    """The product's rule under other weights (``ranking.Weights``)."""
    weights = WEIGHTS._replace(**changes)

    def rule(frame: Frame) -> Ranking:
        vectors = frame.input_vec, frame.context_vec
        query = terms(frame.input_text)
        return rank(frame.bank, frame.mask, *vectors, query, frame.top_k, weights)

    return rule


# The rules docs/benchmarks.md's "Evidence keys" table compares (the product's first).
RULES: dict[str, Rule] = {
    "in use (fusion k 1, hop)": product_rule,
    "no hop": weighted(hop=False),
    "no keys (the text alone)": weighted(source=0.0),
    "passage ranking weighs 0.5": weighted(source=0.5),
    "fusion k 0": weighted(fusion_k=0.0),
    "fusion k 3": weighted(fusion_k=3.0),
    "fusion k 20": weighted(fusion_k=20.0),
    "passages scored against the scene too (0.4)": weighted(key_context=0.4),
}


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


async def collect(seeds: Sequence[int], planted: Sequence[int]) -> list[Frame]:
    """The frames of the dense sets of ``seeds`` and the planted-fact sets of ``planted``."""
    frames: list[Frame] = []
    with ModelDouble() as double:
        async with player(EMBEDDERS["embedded"], double) as p:
            p.frames = frames
            for seed in seeds:
                for adv in dense_set(seed, WINDOW):
                    await play(p, adv, seed)
                    log(f"dense seed {seed} {adv.key}: {len(frames)} frames")
            for seed in planted:
                for planted_adv in default_set(seed):
                    await play_planted(p, planted_adv, measure, leaving)
                    for f in frames:
                        f.seed = f.seed or seed
                    log(f"planted seed {seed} {planted_adv.key}: {len(frames)} frames")
    return frames


def evaluate(frames: Sequence[Frame], rules: dict[str, Rule]) -> str:
    """Fact in prompt on the dense frames, by kind; recall on the planted-fact frames."""
    counter = BpeCounter()  # the loopback narrator's counter, as in the dry runs
    asked = [f for f in frames if f.statements]
    planted = [f for f in frames if f.planted]
    kinds = [k for k in PROBE_KINDS if any(f.kind == k for f in asked)]
    lines = [
        f"| rule ({len(asked)} dense probes) | fact in prompt | tokens (median) | "
        + " | ".join(kinds)
        + f" | planted recall ({len(planted)}) |",
        "|---|---:|---:|" + "---:|" * (len(kinds) + 1),
    ]
    for name, rule in rules.items():
        hits: dict[str, list[bool]] = defaultdict(list)
        tokens: list[int] = []
        disagree = 0
        for f in asked:
            fact, count = replay(f, rule, counter)
            hits[f.kind].append(fact)
            tokens.append(count)
            disagree += rule is product_rule and fact != f.product_fact and not f.planted
        every = [h for k in kinds for h in hits[k]]
        tokens.sort()
        per_kind = " | ".join(f"{sum(hits[k]) / len(hits[k]):.2f}" for k in kinds)
        found = [bool({s.id for s in rule(f).chosen} & f.hits) for f in planted]
        recall = f"{sum(found) / len(found):.2f}" if found else "–"
        median = tokens[len(tokens) // 2] if tokens else 0
        share = sum(every) / len(every) if every else 0.0
        lines.append(f"| {name} | {share:.2f} | {median} | {per_kind} | {recall} |")
        if rule is product_rule and disagree:
            log(f"the product's rule disagrees with the dry runs on {disagree} frames")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--collect", type=Path, help="play the seeds, pickle their frames here")
    parser.add_argument("--seeds", type=int, nargs="*", default=[TUNE_SEED], help="dense sets")
    parser.add_argument("--planted", type=int, nargs="*", default=[], help="planted-fact sets")
    parser.add_argument("--frames", type=Path, help="replay the rules over these frames")
    args = parser.parse_args(argv)
    if args.collect:
        frames = asyncio.run(collect(args.seeds, args.planted))
        args.collect.write_bytes(pickle.dumps(frames))
        log(f"{len(frames)} frames written to {args.collect}")
    elif args.frames:
        frames = pickle.loads(args.frames.read_bytes())  # our own file, written above
    else:
        parser.error("give --collect FILE or --frames FILE")
    print(evaluate(frames, RULES))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
