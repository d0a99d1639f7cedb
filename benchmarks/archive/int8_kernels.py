"""Int8 kernels by CPU: what the int8 reading computes on each kind of CPU, and what its
headroom costs.

Large banks read their passages' cosines at int8 first (``services/memory/int8.py``), on
onnxruntime's ``MatMulInteger``, whose kernel depends on the CPU. For each CPU below, over
the vectors of a book's sentences embedded by the embedded MiniLM (rows against queries):

- what the kernel makes of full-range codes (exact, or 16-bit pair sums that saturate);
- with the query's codes over the whole int8 range (as they were) and at 64 steps a side
  (as they are): how many readings leave their bound and by how much, and whether the
  estimates are bit for bit this machine's;
- on the large banks of the ranking tests (``tests/test_ranking_int8.py``: passages that
  share the query's strongest components), how many choices differ from float32's.

CPUs: this machine's own kernel; onnxruntime's own kernels for Haswell (AVX2 alone) and
Nehalem (SSE4.1) run under ``qemu-x86_64 -cpu ...`` (their results, not their speed); and
AVX-512 without VNNI, which QEMU cannot emulate, through the model of its kernel (the same
``vpmaddubsw`` pairs as AVX2's: ``int8.saturating_pairs``).

Then, timed here only: ranking a bank of 5,000 memories with 12 passages each (random unit
vectors, as "Memory ranking" does) on float32 alone (what a CPU whose kernel fails the
check gets), on int8 codes over the whole range and at 64 steps: passages read again in
float32, and the time of a ranking.

    .venv/bin/python benchmarks/int8_kernels.py --text BOOK.txt [--write docs/benchmarks.md]

BOOK.txt: any plain-text book in English (the figures in docs/benchmarks.md: Pride and
Prejudice, Project Gutenberg's plain text).
"""

from __future__ import annotations

import os

# One BLAS thread, as the ranking benchmark: set before NumPy is first imported.
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"

import argparse  # noqa: E402
import asyncio  # noqa: E402
import hashlib  # noqa: E402
import json  # noqa: E402
import re  # noqa: E402
import shutil  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from collections.abc import Iterator  # noqa: E402
from contextlib import contextmanager  # noqa: E402
from dataclasses import asdict, dataclass  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

import numpy as np  # noqa: E402

from benchmarks.kit.report import machine_description, publish  # noqa: E402
from talekeeper.services.memory import int8  # noqa: E402
from talekeeper.services.memory.keyset import KeyInput  # noqa: E402
from talekeeper.services.memory.ranking import Bank, BankRow, rank  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # run as a file: the ranking tests' banks are read from tests/
from tests.test_ranking_int8 import LARGE_SEEDS, chosen, spiky_bank  # noqa: E402

ROWS, QUERIES = 2_000, 100
WHOLE = 127  # the query's codes as they were
TIMED_MEMORIES, KEYS_PER_MEMORY, TIMED_QUERIES, TIMED_ROUNDS = 5_000, 12, 40, 5
DIMS = 384


@dataclass(frozen=True)
class Cpu:
    label: str
    how: str  # "native", "qemu:MODEL" or "model"


CPUS = (
    Cpu("this machine", "native"),
    Cpu("Haswell: AVX2, no AVX-512", "qemu:Haswell"),
    Cpu("Nehalem: SSE4.1, no AVX", "qemu:Nehalem"),
    Cpu("AVX-512 without VNNI (Skylake-SP)", "model"),
)


@dataclass
class Readings:
    kernel: str
    full_range: str
    outside_whole: int  # readings outside their bound, whole-range query codes
    worst_whole: float  # the largest |error| / bound there
    outside_headroom: int
    worst_headroom: float
    median_bound_whole: float
    median_bound_headroom: float
    float32_error: float  # worst |float32 product - float64| (the rescoring's own rounding)
    digest: str  # of the estimates at 64 steps, to compare across CPUs (the bounds' norms
    # come from each CPU's BLAS and may differ in their last bits)
    wrong_whole: int  # large-bank choices unlike float32's, whole range
    wrong_headroom: int
    cases: int


# -- the vectors -----------------------------------------------------------------------------


def sentences(book: Path, count: int) -> list[str]:
    """``count`` sentences of 40 to 300 characters, spread evenly through the book."""
    text = book.read_text(encoding="utf-8", errors="replace")
    found = [
        " ".join(s.split())
        for s in re.split(r"(?<=[.!?])\s+", text)
        if 40 <= len(" ".join(s.split())) <= 300
    ]
    if len(found) < count:
        raise SystemExit(f"{book} has {len(found)} sentences of 40-300 characters; need {count}")
    step = len(found) / count
    return [found[int(i * step)] for i in range(count)]


def embed(texts: list[str]) -> np.ndarray:
    from talekeeper.providers.embedded import EmbeddedProvider

    provider = EmbeddedProvider()

    async def run() -> list[list[float]]:
        out: list[list[float]] = []
        for start in range(0, len(texts), 64):
            out += (await provider.embed(texts[start : start + 64], "embedded")).vectors
        await provider.aclose()
        return out

    vectors: np.ndarray = np.asarray(asyncio.run(run()), dtype=np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors


# -- what one CPU computes ------------------------------------------------------------------


@contextmanager
def codes_as_they_were(kernel: int8.Kernel) -> Iterator[None]:
    """The int8 path before the headroom: query codes over the whole range, the kernel
    used unchecked. (The module's state, set on purpose: only a benchmark does this.)"""
    peak = int8.QUERY_PEAK
    int8.QUERY_PEAK = WHOLE
    int8._state["kernel"] = kernel
    try:
        yield
    finally:
        int8.QUERY_PEAK = peak
        int8.restore()


def readings(vectors: np.ndarray, product: int8.Product) -> dict[str, Any]:
    rows, queries = vectors[:ROWS], vectors[ROWS : ROWS + QUERIES]
    codes = int8.Codes.of(rows)
    exact = rows.astype(np.float64) @ queries.astype(np.float64).T
    out: dict[str, Any] = {}
    digest = hashlib.sha256()
    for name, peak in (("whole", WHOLE), ("headroom", int8.QUERY_PEAK)):
        outside, worst, bounds = 0, 0.0, []
        for i, query in enumerate(queries):
            dot, bound = codes.reading(query, product, peak)
            error = np.abs(exact[:, i] - dot)
            outside += int(np.sum(error > bound))
            worst = max(worst, float(np.max(error / bound)))
            bounds.append(float(np.median(bound)))
            if name == "headroom":  # the estimate: the kernel's integers, scaled
                digest.update(dot.tobytes())
        out |= {
            f"outside_{name}": outside,
            f"worst_{name}": worst,
            f"median_bound_{name}": statistics.median(bounds),
        }
    rescoring = np.abs(rows @ queries.T - exact).max()  # float32, as ranking rescores
    return out | {"digest": digest.hexdigest()[:16], "float32_error": float(rescoring)}


def large_bank_choices(kernel: int8.Kernel) -> dict[str, Any]:
    banks = [spiky_bank(seed) for seed in LARGE_SEEDS]
    cases = [(b, k, c) for b in banks for k in (1, 5, 9) for c in (True, False)]

    def wrong() -> int:
        return sum(chosen(a) != chosen(p) for a, p in (b.both(k, c) for b, k, c in cases))

    with codes_as_they_were(kernel):
        whole = wrong()
    assert int8.install(kernel) is None
    try:
        headroom = wrong()
    finally:
        int8.restore()
    return {"wrong_whole": whole, "wrong_headroom": headroom, "cases": len(cases)}


def measure_here(vectors: np.ndarray, model: bool) -> Readings:
    """This process's CPU: onnxruntime's kernel, or (``model``) AVX2's model in its place."""
    kernel = int8.current()
    if kernel is None:
        raise SystemExit("no int8 kernel here: install onnxruntime")
    if model:
        kernel = int8.Kernel("model of vpmaddubsw pairs", int8.saturating_pairs)
    return Readings(
        kernel=kernel.name,
        full_range=int8.full_range(kernel.product).value,
        **readings(vectors, kernel.product),
        **large_bank_choices(kernel),
    )


def measure(cpu: Cpu, vector_file: Path) -> Readings:
    if not cpu.how.startswith("qemu:"):
        return measure_here(np.load(vector_file), cpu.how == "model")
    qemu = shutil.which("qemu-x86_64")
    if qemu is None:
        raise SystemExit("qemu-x86_64 is missing: apt-get install qemu-user")
    done = subprocess.run(
        [qemu, "-cpu", cpu.how.split(":", 1)[1], sys.executable, __file__,
         "--child", str(vector_file)],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        check=False,
    )  # fmt: skip
    if done.returncode != 0:
        raise SystemExit(f"{cpu.label}: the emulated run failed\n{done.stderr[-3000:]}")
    return Readings(**json.loads(done.stdout.strip().splitlines()[-1]))


# -- what the headroom costs here ----------------------------------------------------------


@dataclass
class Cost:
    path: str
    rescored: float  # passages read again in float32, mean per ranking
    median_ms: float
    p95_ms: float


def timed_bank(seed: int) -> tuple[Bank, Bank, list[tuple[np.ndarray, np.ndarray]]]:
    rng = np.random.default_rng(seed)

    def unit(n: int) -> np.ndarray:
        m: np.ndarray = rng.standard_normal((n, DIMS)).astype(np.float32)
        m /= np.linalg.norm(m, axis=1, keepdims=True)
        return m

    texts, passages = unit(TIMED_MEMORIES), unit(TIMED_MEMORIES * KEYS_PER_MEMORY)
    rows = [BankRow(i + 1, 1, i, texts[i], False, False, frozenset()) for i in range(len(texts))]
    keys = [
        KeyInput(k + 1, k // KEYS_PER_MEMORY + 1, k // KEYS_PER_MEMORY, passages[k], frozenset())
        for k in range(len(passages))
    ]
    coded, plain = (
        Bank.build(rows, DIMS, keys=keys),
        Bank.build(rows, DIMS, keys=keys, quantize_at=10**9),
    )
    queries = [(q, c) for q, c in zip(unit(TIMED_QUERIES), unit(TIMED_QUERIES), strict=True)]
    return coded, plain, queries  # fmt: skip


def costs(seed: int) -> list[Cost]:
    coded, plain, queries = timed_bank(seed)
    mask = np.ones(coded.size, dtype=np.bool_)
    paths = {
        "float32 alone (a kernel the check refuses)": (plain, None),
        f"int8, query codes over the whole range (±{WHOLE}, as they were)": (coded, WHOLE),
        f"int8, query codes at ±{int8.QUERY_PEAK} (as they are)": (coded, int8.QUERY_PEAK),
    }
    samples: dict[str, list[float]] = {name: [] for name in paths}
    rescored: dict[str, list[int]] = {name: [] for name in paths}
    base = int8.QUERY_PEAK
    for _ in range(TIMED_ROUNDS):  # round-robin, so a busy moment weighs on every path
        for name, (bank, peak) in paths.items():
            int8.QUERY_PEAK = peak or base
            int8.restore()  # checked again at this range
            if peak is not None and not int8.available():
                continue  # refused here: this CPU's kernel is not exact at that range
            for q_in, q_ctx in queries:
                started = time.perf_counter()
                ranking = rank(bank, mask, q_in, q_ctx, [], 5)
                samples[name].append((time.perf_counter() - started) * 1000)
                rescored[name].append(ranking.rescored)
    int8.QUERY_PEAK = base
    int8.restore()
    out = []
    for name, times in samples.items():
        if times:
            times.sort()
            p95 = times[min(len(times) - 1, int(0.95 * len(times)))]
            out.append(Cost(name, statistics.fmean(rescored[name]), statistics.median(times), p95))
    return out


def products(seed: int) -> dict[str, float]:
    """The two products alone over the timed bank's passages (median ms)."""
    coded, _, queries = timed_bank(seed)
    assert coded.keys is not None and coded.keys.codes is not None
    codes, vectors = coded.keys.codes, coded.keys.vectors

    def median(fn: Any) -> float:
        times = []
        for q, _ in queries * 3:
            started = time.perf_counter()
            fn(q)
            times.append((time.perf_counter() - started) * 1000)
        return statistics.median(times)

    return {
        "int8": median(codes.estimate),
        "float32": median(lambda q: vectors @ q),
        "keys": float(codes.size),
    }


# -- the report ----------------------------------------------------------------------------


def markdown(
    results: dict[str, Readings], cost: list[Cost], product: dict[str, float], run: dict[str, Any]
) -> str:
    here = results["this machine"]
    lines = [
        "What the int8 reading of a large bank's passages (`services/memory/int8.py`) computes "
        "on each kind of CPU, and what making it exact everywhere costs. onnxruntime's "
        "`MatMulInteger` multiplies the query's uint8 codes (its steps shifted up by their "
        "peak) by the passages' int8 codes (-127..127, held as columns). With AVX-512 VNNI "
        "(or AVX-VNNI) four byte products go into the int32 sum at once; with SSE4.1 or AVX "
        "the bytes are widened to 16 bits first: both exact. With AVX2 alone, or AVX-512 "
        "without VNNI, `vpmaddubsw` adds each two neighbouring uint8 × int8 products in a "
        "*saturating* 16-bit sum: a query over the whole range (±127, shifted to 0..254) "
        "reaches 2 × 254 × 127 = 64,516 and is clipped to 32,767. That happens where a "
        "passage and the query share their largest components, which is where the passages "
        "that matter are. Now the query's codes stop at ±64 (0..128 shifted: 2 × 128 × 127 = "
        "32,512 fits), so every kernel computes the exact integers, and a kernel is used "
        "only once it has computed known products exactly (else float32 alone).",
        "",
        f"Readings: {ROWS:,} passages × {QUERIES} queries, sentences of {run['book']} embedded "
        "by the embedded all-MiniLM-L6-v2 (each its own unit vector). Large banks: the four "
        "generated banks of the ranking tests (700 memories, 8,400 passages over the codes' "
        "threshold, half of them sharing the query's strongest pair of components, built so "
        "that a saturating kernel would bite; no real-text bank here is that large), top 1, 5 "
        "and 9, with and without the scene vector: 24 choices, each compared with float32's. "
        "Emulated CPUs run onnxruntime's own kernel for that CPU under `qemu-x86_64 -cpu ...` "
        "(results, not speed); AVX-512 without VNNI, which QEMU cannot emulate, runs the model "
        "of its kernel (`int8.saturating_pairs`, the same as AVX2's: the model and the real "
        "AVX2 kernel give the same figures above it). "
        f"This machine: {run['cpu']} ({run['flags']}); OPENBLAS_CORETYPE "
        f"{run['coretype']}.",
        "",
        "| CPU | kernel, full-range codes | whole range: readings outside the bound | worst "
        "error / bound | ±64: outside | ±64: estimates as this machine's | large banks: "
        "choices unlike float32's, whole range | ±64 | float32 rescoring: worst error |",
        "|---|---|---:|---:|---:|---|---:|---:|---:|",
    ]
    total = ROWS * QUERIES
    for label, r in results.items():
        lines.append(
            f"| {label} | {r.full_range} | {r.outside_whole:,} of {total:,} | "
            f"{r.worst_whole:.2f} | {r.outside_headroom} | "
            f"{'yes' if r.digest == here.digest else 'NO'} | {r.wrong_whole} of {r.cases} | "
            f"{r.wrong_headroom} of {r.cases} | {r.float32_error:.1e} |"
        )
    lines += [
        "",
        "The last column is the float32 product's own rounding, the product that rescores "
        "(OpenBLAS picks its kernel by the CPU, as OPENBLAS_CORETYPE does by hand): far "
        f"inside the bound's margin of {int8.FLOAT_MARGIN:g} on every CPU.",
        "",
        f"The bound's median for a unit query: {here.median_bound_whole:.4f} with the whole "
        f"range, {here.median_bound_headroom:.4f} at ±64 (the query's rounding error doubles; "
        "the passages' is unchanged). The kernel runs the same instructions whatever the "
        "values, so its speed does not move; what moves is how many passages fall within the "
        "bound of a decision and are read again in float32. Those are the same passages on "
        "every CPU (the same estimates; the bounds' norms may differ in their last bits), so "
        "the count below holds for all; the milliseconds are this machine's. "
        f"{TIMED_MEMORIES:,} memories × {KEYS_PER_MEMORY} passages (random unit vectors, "
        f"{int(product['keys']):,} codes), {TIMED_QUERIES} queries × {TIMED_ROUNDS} rounds, "
        "top 5:",
        "",
        "| path | passages read again in float32 (mean) | ranking, median | p95 |",
        "|---|---:|---:|---:|",
    ]
    lines += [
        f"| {c.path} | {c.rescored:,.0f} | {c.median_ms:.2f} ms | {c.p95_ms:.2f} ms |" for c in cost
    ]
    lines += [
        "",
        f"The products alone here: int8 {product['int8']:.2f} ms, float32 "
        f"{product['float32']:.2f} ms for {int(product['keys']):,} passages. On AVX2 and "
        "AVX-512-without-VNNI machines the int8 readings used to be wrong (above); there the "
        "headroom costs the same extra float32 reads as here, and its kernel's "
        "speed could not be timed on this machine (QEMU does not run at the CPU's pace). "
        "Where a kernel fails the check, ranking is the float32 row: never wrong, and "
        "slower by what the two products above differ.",
        "",
        f"{run['machine']}; load average {run['load'][0]:.1f} before and {run['load'][1]:.1f} "
        f"after; {run['seconds']:.0f} s in all (`.venv/bin/python benchmarks/int8_kernels.py "
        "--text BOOK.txt --write docs/benchmarks.md`).",
    ]  # fmt: skip
    return "\n".join(lines)


def cpu_name() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.partition(":")[2].strip()
    except OSError:
        pass
    return "unknown CPU"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--text", type=Path, help="a plain-text book whose sentences to embed")
    parser.add_argument("--write", type=Path, help="store the tables in this Markdown file")
    parser.add_argument("--seed", type=int, default=27)
    parser.add_argument("--child", type=Path, help=argparse.SUPPRESS)  # an emulated CPU's run
    args = parser.parse_args(argv)
    if args.child is not None:
        print(json.dumps(asdict(measure_here(np.load(args.child), False))))
        return 0
    if args.text is None:
        parser.error("--text BOOK.txt is needed: the sentences whose vectors are read")
    load_before = os.getloadavg()[0]
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="talekeeper-int8-") as root:
        vector_file = Path(root) / "vectors.npy"
        np.save(vector_file, embed(sentences(args.text, ROWS + QUERIES)))
        results = {}
        for cpu in CPUS:
            print(f"{cpu.label} ...", file=sys.stderr)
            results[cpu.label] = measure(cpu, vector_file)
    cost = costs(args.seed)
    product = products(args.seed)
    run = {
        "book": args.text.name,
        "cpu": cpu_name(),
        "flags": " ".join(int8.cpu_flags()) or "no flags read",
        "coretype": os.environ.get("OPENBLAS_CORETYPE", "unset"),
        "machine": machine_description(),
        "load": (load_before, os.getloadavg()[0]),
        "seconds": time.perf_counter() - started,
    }
    body = markdown(results, cost, product, run)
    publish(body, args.write, "int8", "Int8 kernels by CPU")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
