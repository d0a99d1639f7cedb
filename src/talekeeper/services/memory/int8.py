"""Int8 matrix-vector products: a quick first reading of many cosines, with its error bound.

A bank of thousands of memories has tens of thousands of evidence keys; one float32
product over them reads 1.5 KB a key and is bound by memory speed (65,000 keys of 384
dimensions: 4 to 8 ms here). The same product over int8 codes reads a quarter of that.
NumPy has no fast integer product, so it runs on onnxruntime's ``MatMulInteger`` (already
installed for the embedded embedder): the query's uint8 codes as a one-row matrix against the
rows' int8 codes held as columns (one column a row), summed in int32. The rows go in as
columns because the kernel reads that shape about six times as fast as the rows against a
one-column query (65,000 keys: 1.2 ms against 7.2 ms on one thread here).

What that kernel computes depends on the CPU. With AVX-512 VNNI (or AVX-VNNI) each
product of four byte pairs is added to the int32 sum at once; with SSE4.1 or AVX the bytes
are widened to 16 bits first: both exact. With AVX2 alone, or AVX-512 without VNNI, it
multiplies uint8 by int8 and adds each two neighbouring products in a *saturating* 16-bit
sum (``vpmaddubsw``) before widening: a pair beyond 32,767 is clipped. Codes that use the
whole int8 range on both sides reach 2 x 255 x 127 = 64,770, and the reading leaves its
bound (docs/benchmarks.md, "Int8 kernels by CPU": about 0.1% of readings of MiniLM
sentence vectors, by up to twice the bound). So:

Invariants:

- ``Codes.of(matrix)`` quantises each row on its own scale: ``code = round(row * scale)``
  with ``scale = 127 / max |row|``, stored in int8 (-127..127) as column r of ``columns``
  (dims x n), with each row's sum of codes and the norms the bound needs.
- The query is quantised at each call to ``QUERY_PEAK`` = 64 steps a side
  (``scale = 64 / max |query|``) and shifted by 64 into uint8 (0..128); the shift comes off
  again exactly as 64 x the row's sum of codes. Every sum of two products a kernel forms
  fits 16 bits: 2 x 128 x 127 = 32,512 <= 32,767. With these codes every kernel above
  computes the exact integer product, so the estimate is the same on every CPU. (The
  price: the query's rounding error doubles and the bound grows by about half; the
  rescored rows double, a fraction of a millisecond: docs/benchmarks.md.)
- A kernel is used only once it has computed exactly a set of known products at those
  ranges (``check``): both operands at their extremes, alternating signs, random codes,
  widths with and without a tail. One that fails is never used (logged once): ranking
  then uses the float32 product alone, slower and never different.
- ``Codes.estimate(query)`` returns ``(estimate, bound)`` with, for every row r,
  ``|row_r . query - estimate_r| <= bound_r``: the bound is the exact algebra of the two
  roundings (``|k.w - k~.w~| <= |k~| |dw| + |dk| |w~| + |dk| |dw|``, Cauchy-Schwarz) plus
  a margin for float32 rounding in the exact product it stands in for. Callers that need
  exact order rescore exactly every row whose bound reaches the decision (``ranking``).
- Without onnxruntime (or if the kernel cannot be built or fails its check),
  ``available()`` is False and callers use the float32 product alone.
"""

from __future__ import annotations

import enum
import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

log = logging.getLogger(__name__)

F64 = npt.NDArray[np.float64]
U8 = npt.NDArray[np.uint8]
I8 = npt.NDArray[np.int8]
# The exact product's own rounding: float32 over a few hundred dimensions stays far below
# (3e-7 at 384 dimensions, whichever OpenBLAS kernel OPENBLAS_CORETYPE picks).
FLOAT_MARGIN = 1e-4
ROW_PEAK = 127  # the rows' codes: -127..127, in int8
# The query's codes: -64..64, shifted by QUERY_PEAK into uint8 0..128, so that
# 2 x 2 QUERY_PEAK x ROW_PEAK fits a signed 16-bit sum.
QUERY_PEAK = 64
_BLOCK = 8192  # rows quantised at a time
_INT16_MAX = 32767


def _steps(peak: npt.NDArray[Any], levels: int) -> npt.NDArray[Any]:
    """Each row's scale, in ``peak``'s precision: ``levels / peak`` (1 for an all-zero row)."""
    step: npt.NDArray[Any] = np.where(peak > 0, levels / np.where(peak > 0, peak, 1.0), 1.0)
    return step


def _quantise(matrix: npt.NDArray[np.floating], levels: int) -> tuple[npt.NDArray[np.float64], F64]:
    """Each row rounded to integer steps on its own scale: (codes in -levels..levels, scale)."""
    wide = np.atleast_2d(matrix).astype(np.float64)
    peak = np.abs(wide).max(axis=1) if wide.size else np.zeros(wide.shape[0])
    scale = _steps(peak, levels)
    return np.rint(wide * scale[:, None]).clip(-levels, levels), scale


@dataclass(eq=False)
class Codes:
    """A float matrix's rows as int8 codes (held as columns), with what the bound needs."""

    columns: I8  # (dims, n): column r is round(row r * scale r)
    sums: npt.NDArray[np.int64]  # (n,): each row's sum of codes
    scale: F64  # (n,)
    error: F64  # (n,): |row - code / scale|
    norm: F64  # (n,): |code / scale|

    @property
    def size(self) -> int:
        return int(self.columns.shape[1])

    @classmethod
    def of(cls, matrix: npt.NDArray[np.float32]) -> Codes:
        # float32 in blocks: the codes are exact in it, the norms off by a few parts in ten
        # million (``FLOAT_MARGIN`` covers that), and no float64 copy of a large bank is made.
        n = matrix.shape[0]
        columns = np.empty((matrix.shape[1], n), dtype=np.int8)
        sums = np.empty(n, dtype=np.int64)
        scale, error, norm = np.empty(n), np.empty(n), np.empty(n)
        for start in range(0, n, _BLOCK):
            block = np.asarray(matrix[start : start + _BLOCK], dtype=np.float32)
            peak = np.abs(block).max(axis=1) if block.size else np.zeros(block.shape[0])
            step = _steps(peak, ROW_PEAK)
            rounded = np.rint(block * step[:, None].astype(np.float32)).clip(-ROW_PEAK, ROW_PEAK)
            back = rounded / step[:, None].astype(np.float32)
            end = start + block.shape[0]
            codes = rounded.astype(np.int8)
            columns[:, start:end] = codes.T
            sums[start:end] = codes.sum(axis=1, dtype=np.int64)
            scale[start:end] = step.astype(np.float32)  # the step the codes were made with
            error[start:end] = np.linalg.norm(block - back, axis=1)
            norm[start:end] = np.linalg.norm(back, axis=1)
        return cls(columns, sums, scale, error, norm)

    def patched(self, keep: npt.NDArray[np.bool_], added: Codes) -> Codes:
        """The kept rows' codes, then ``added``'s: each row's codes depend on that row alone,
        so this equals quantising the patched matrix again."""
        return Codes(
            np.concatenate((np.compress(keep, self.columns, axis=1), added.columns), axis=1),
            np.concatenate((self.sums[keep], added.sums)),
            np.concatenate((self.scale[keep], added.scale)),
            np.concatenate((self.error[keep], added.error)),
            np.concatenate((self.norm[keep], added.norm)),
        )

    def estimate(self, query: npt.NDArray[np.float32]) -> tuple[F64, F64] | None:
        """(estimate, bound) of every row's product with ``query``; None without the kernel."""
        kernel = current()
        if kernel is None:
            return None
        try:
            return self.reading(query, kernel.product, QUERY_PEAK)
        except Exception:  # noqa: BLE001 -- a kernel that fails is a kernel we do without
            log.exception("the int8 product failed; ranking falls back to float32")
            install(None)
            return None

    def reading(
        self, query: npt.NDArray[np.floating], product: Product, peak: int
    ) -> tuple[F64, F64]:
        """(estimate, bound) through ``product``, the query's codes at ``peak`` steps a side.
        The bound holds where ``product`` computes the exact integers at that range (as
        ``check`` asks at ``QUERY_PEAK``); the benchmark reads other ranges through it."""
        rounded, scale = _quantise(query.reshape(-1), peak)
        back = rounded[0] / scale[0]
        q_error = float(np.linalg.norm(query.astype(np.float64).reshape(-1) - back))
        q_norm = float(np.linalg.norm(back))
        if self.size:
            shifted = (rounded[0] + peak).astype(np.uint8)  # 0..2 peak
            raw = np.asarray(product(shifted, self.columns), dtype=np.int64).reshape(-1)
            exact = raw - peak * self.sums  # the shift off again: integers, exactly
        else:
            exact = np.zeros(0, dtype=np.int64)
        dot = exact.astype(np.float64) / (self.scale * scale[0])
        bound = self.norm * q_error + self.error * (q_norm + q_error) + FLOAT_MARGIN
        return dot, bound


# -- the kernel ----------------------------------------------------------------------------

# uint8 query (d,) x int8 columns (d, n) -> (n,) integer sums (what a kernel gives is
# checked before it is trusted: ``check``)
Product = Callable[[U8, I8], npt.NDArray[Any]]


@dataclass(frozen=True)
class Kernel:
    name: str
    product: Product


class FullRange(enum.Enum):
    """What a kernel makes of codes over the whole int8 range on both sides (which the
    query's ``QUERY_PEAK`` avoids): told in diagnostics, never relied on."""

    EXACT = "exact"
    SATURATES_PAIRS = "saturates 16-bit pair sums"  # AVX2, AVX-512 without VNNI
    INEXACT = "inexact"  # some other way


def exact(query: U8, columns: I8) -> npt.NDArray[np.int64]:
    """The product as it should be: what every kernel is held to."""
    return np.asarray(query.astype(np.int64) @ columns.astype(np.int64), dtype=np.int64)


def saturating_pairs(query: U8, columns: I8) -> npt.NDArray[np.int64]:
    """The product as AVX2's kernel computes it (and AVX-512's without VNNI): each two
    neighbouring uint8 x int8 products summed and clipped to 16 bits (``vpmaddubsw``),
    then summed exactly. Kept as a model: ``describe`` compares the real kernel with it."""
    products = query.astype(np.int64)[:, None] * columns.astype(np.int64)
    if products.shape[0] % 2:
        products = np.pad(products, ((0, 1), (0, 0)))
    pairs = products[0::2] + products[1::2]
    return np.asarray(np.clip(pairs, -_INT16_MAX - 1, _INT16_MAX).sum(axis=0), dtype=np.int64)


def check(product: Product) -> str | None:
    """Why ``product`` cannot be trusted with this module's codes (None: it can): it must
    compute the exact integer product of known queries and columns at the codes' extremes."""
    rng = np.random.default_rng(20261205)
    top = 2 * QUERY_PEAK  # the shifted query's largest code
    for width in (3, 64, 385):  # with and without a tail of the kernel's blocks
        full = np.ones(width, dtype=np.int64)
        alternate = np.resize([1, -1], width)
        columns = np.stack(
            [
                full * ROW_PEAK,
                full * -ROW_PEAK,
                full * 0,
                ROW_PEAK * alternate,
                -ROW_PEAK * alternate,
                *rng.integers(-ROW_PEAK, ROW_PEAK + 1, (4, width)),
            ],
            axis=1,
        ).astype(np.int8)
        queries = [
            full * top,
            full * 0,
            np.resize([top, 0], width),
            np.resize([0, top], width),
            rng.integers(0, top + 1, width),
        ]
        for query in queries:
            codes = query.astype(np.uint8)
            want = exact(codes, columns)
            try:
                got = np.asarray(product(codes, columns)).reshape(-1)
            except Exception as exc:  # noqa: BLE001 -- a kernel that fails is refused
                return f"it failed on a known product: {exc}"
            if got.shape != want.shape or not np.array_equal(got, want):
                return (
                    f"it read {got[:3].tolist()}... where the exact product of known "
                    f"codes ({width} wide) is {want[:3].tolist()}..."
                )
    return None


def full_range(product: Product) -> FullRange:
    """What ``product`` computes for full-range codes: a query at 255, columns at 127."""
    width = 64
    query = np.full(width, 255, dtype=np.uint8)
    columns = np.stack(
        [np.full(width, 127), np.full(width, -127), np.resize([127, 1], width)], axis=1
    ).astype(np.int8)
    got = np.asarray(product(query, columns)).reshape(-1)
    if np.array_equal(got, exact(query, columns)):
        return FullRange.EXACT
    if np.array_equal(got, saturating_pairs(query, columns)):
        return FullRange.SATURATES_PAIRS
    return FullRange.INEXACT


# The CPU features that decide which of onnxruntime's integer kernels runs.
KERNEL_FLAGS = (
    "sse4_1", "avx", "avx2", "avx512f", "avx512bw", "avx512_vnni", "avx_vnni", "amx_int8",
)  # fmt: skip


def cpu_flags(cpuinfo: Path = Path("/proc/cpuinfo")) -> tuple[str, ...]:
    """Which of ``KERNEL_FLAGS`` the CPU reports (Linux; empty elsewhere)."""
    try:
        text = cpuinfo.read_text(errors="replace")
    except OSError:
        return ()
    for line in text.splitlines():
        if line.startswith("flags"):
            have = set(line.partition(":")[2].split())
            return tuple(flag for flag in KERNEL_FLAGS if flag in have)
    return ()


@dataclass(frozen=True)
class KernelReport:
    kernel: str | None  # None: no int8 kernel, the float32 product alone
    full_range: FullRange | None
    flags: tuple[str, ...]

    def line(self) -> str:
        flags = " ".join(self.flags) or "none reported"
        if self.kernel is None:
            return f"int8 ranking off (float32 only); CPU flags: {flags}"
        assert self.full_range is not None
        return (
            f"int8 ranking on {self.kernel}, exact at the codes' ranges "
            f"(full-range codes: {self.full_range.value}); CPU flags: {flags}"
        )


def describe() -> KernelReport:
    kernel = current()
    if kernel is None:
        return KernelReport(None, None, cpu_flags())
    return KernelReport(kernel.name, full_range(kernel.product), cpu_flags())


def available() -> bool:
    return current() is not None


_lock = threading.Lock()
_state: dict[str, Kernel | None] = {}


def install(kernel: Kernel | None) -> str | None:
    """Compute products with ``kernel`` from now on (None: the float32 product alone) once
    it passes ``check``; returns why it was refused (then none is used). ``restore`` goes
    back to onnxruntime's. The tests' models of other CPUs' kernels come in here."""
    reason = check(kernel.product) if kernel is not None else None
    with _lock:
        _state["kernel"] = kernel if reason is None else None
    return reason


def restore() -> None:
    with _lock:
        _state.pop("kernel", None)


def current() -> Kernel | None:
    """The kernel in use (None: the float32 product alone): onnxruntime's, built and
    checked on first use, unless ``install`` put another in its place."""
    with _lock:
        if "kernel" not in _state:
            _state["kernel"] = _checked(_onnxcurrent())
        return _state["kernel"]


def _checked(kernel: Kernel | None) -> Kernel | None:
    if kernel is None:
        return None
    reason = check(kernel.product)
    if reason is not None:
        log.warning(
            "the int8 kernel %s is not exact here (%s); ranking uses float32", kernel.name, reason
        )
        return None
    return kernel


# -- onnxruntime's: one MatMulInteger node, uint8 query (1, d) x int8 columns (d, n) -> int32


def _onnxcurrent() -> Kernel | None:
    try:
        import onnxruntime as ort

        options = ort.SessionOptions()
        options.intra_op_num_threads = 1  # ranking runs beside the request's other work
        options.inter_op_num_threads = 1
        options.log_severity_level = 3
        session = ort.InferenceSession(_model(), options, providers=["CPUExecutionProvider"])
    except Exception:  # noqa: BLE001 -- without the kernel, the float32 product does it all
        log.warning("no int8 kernel (onnxruntime); ranking many keys uses float32 only")
        return None

    def product(query: U8, columns: I8) -> npt.NDArray[np.integer]:
        out = session.run(None, {"query": query.reshape(1, -1), "columns": columns})[0]
        return np.asarray(out).reshape(-1)

    return Kernel("onnxruntime MatMulInteger", product)


# The model is five protobuf messages; writing them here spares a dependency on the onnx
# package for one node. Field numbers are the ONNX schema's (onnx.proto3).
_UINT8, _INT8, _INT32 = 2, 3, 6


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        low, n = n & 0x7F, n >> 7
        out.append(low | (0x80 if n else 0))
        if not n:
            return bytes(out)


def _bytes(number: int, data: bytes | str) -> bytes:
    raw = data.encode() if isinstance(data, str) else data
    return _varint(number << 3 | 2) + _varint(len(raw)) + raw


def _int(number: int, value: int) -> bytes:
    return _varint(number << 3) + _varint(value)


def _tensor(name: str, elem: int, dims: tuple[int | str, ...]) -> bytes:
    shape = b"".join(
        _bytes(1, _int(1, d) if isinstance(d, int) else _bytes(2, d)) for d in dims
    )  # TensorShapeProto.dim: dim_value (1) or dim_param (2)
    tensor_type = _int(1, elem) + _bytes(2, shape)  # TypeProto.Tensor: elem_type, shape
    return _bytes(1, name) + _bytes(2, _bytes(1, tensor_type))  # ValueInfoProto: name, type


def _model() -> bytes:
    node = (
        _bytes(1, "query") + _bytes(1, "columns") + _bytes(2, "dots") + _bytes(4, "MatMulInteger")
    )
    graph = (
        _bytes(1, node)  # GraphProto.node
        + _bytes(2, "int8_dots")  # .name
        + _bytes(11, _tensor("query", _UINT8, (1, "d")))  # .input
        + _bytes(11, _tensor("columns", _INT8, ("d", "n")))
        + _bytes(12, _tensor("dots", _INT32, (1, "n")))  # .output
    )
    opset = _bytes(1, "") + _int(2, 13)  # OperatorSetIdProto: default domain, version 13
    return _int(1, 8) + _bytes(7, graph) + _bytes(8, opset)  # ModelProto: ir_version 8
