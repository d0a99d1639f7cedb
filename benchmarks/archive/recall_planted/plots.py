"""The recall benchmark's plots (PNG, matplotlib, no display needed).

- ``recall-by-method.png``: recall@5 per method, one bar per embedder.
- ``recall-by-distance.png``: recall@5 against the distance bucket, one line per
  method, one panel per embedder.
Both are drawn from the same ``ProbeResult`` records as the tables.
"""

from __future__ import annotations

from pathlib import Path

from benchmarks.recall.methods import METHODS
from benchmarks.recall.metrics import bucket, bucket_edges, bucket_labels, recall_at
from benchmarks.recall.probe import ProbeResult
from benchmarks.recall.report import PRODUCT, TARGET, Run, planted

from benchmarks.kit.report import pyplot

BY_METHOD = "recall-by-method.png"
BY_DISTANCE = "recall-by-distance.png"


def _recall5(rs: list[ProbeResult], method: str) -> float:
    return recall_at([r.outcomes[method].rank for r in rs], 5)


def by_method(run: Run, path: Path) -> None:
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(9, 4.2))
    width = 0.8 / max(len(run.embedders), 1)
    for i, embedder in enumerate(run.embedders):
        rs = planted(run.results, embedder)
        values = [_recall5(rs, m) for m in METHODS]
        xs = [x + (i - (len(run.embedders) - 1) / 2) * width for x in range(len(METHODS))]
        bars = ax.bar(xs, values, width, label=embedder)
        ax.bar_label(bars, fmt="%.2f", fontsize=7)
    ax.axhline(TARGET, color="grey", linestyle="--", linewidth=0.8)
    ax.set_xticks(range(len(METHODS)), METHODS, rotation=15)
    ax.set_ylim(0, 1.08)
    ax.set_ylabel("recall@5")
    ax.set_title("Recall@5 of scrolled-out facts, by method")
    ax.legend(title="embedder", fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _in(r: ProbeResult, label: str, edges: tuple[int, ...]) -> bool:
    return r.distance is not None and bucket(r.distance, edges) == label


def by_distance(run: Run, path: Path) -> None:
    plt = pyplot()
    edges = bucket_edges(run.window)
    labels = bucket_labels(edges)
    fig, axes = plt.subplots(
        1, len(run.embedders), figsize=(5 * len(run.embedders), 4), squeeze=False
    )
    for ax, embedder in zip(axes[0], run.embedders, strict=True):
        rs = planted(run.results, embedder)
        for method in METHODS:
            points = []
            for x, label in enumerate(labels):
                group = [
                    r for r in rs if r.distance is not None and bucket(r.distance, edges) == label
                ]
                if group:
                    points.append((x, _recall5(group, method)))
            if points:
                style = {"linewidth": 2.5} if method == PRODUCT else {"linewidth": 1.2}
                ax.plot(
                    [p[0] for p in points],
                    [p[1] for p in points],
                    marker="o",
                    label=method,
                    **style,
                )
        counts = [sum(1 for r in rs if _in(r, label, edges)) for label in labels]
        ax.set_xticks(
            range(len(labels)), [f"{b}\n({n})" for b, n in zip(labels, counts, strict=True)]
        )
        ax.set_ylim(0, 1.05)
        ax.set_xlabel("actions between the fact and the probe (probes)")
        ax.set_ylabel("recall@5")
        ax.set_title(embedder)
    axes[0][0].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def draw(run: Run, folder: Path) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    paths = [folder / BY_METHOD, folder / BY_DISTANCE]
    by_method(run, paths[0])
    by_distance(run, paths[1])
    return paths
