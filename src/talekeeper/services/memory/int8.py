"""Int8 matrix-vector products: a quick first reading of many cosines, with its error bound.

A bank of thousands of memories has tens of thousands of evidence keys; one float32
product over them reads 1.5 KB a key and is bound by memory speed (65,000 keys of 384
dimensions: about 6 ms here). The same product over int8 codes reads a quarter of that.
NumPy has no fast integer product, so it runs on onnxruntime's ``MatMulInteger`` (already
installed for the embedded embedder): about 1.1 ms for those 65,000 keys.

Invariants:

- ``Codes.of(matrix)`` quantises each row on its own scale: ``code = round(row * scale)``
  with ``scale = 127 / max |row|``, stored as ``code + 128`` in uint8 (the kernel's fast
  pairing is uint8 rows against an int8 query), and keeps per row the norms the bound
  needs; the query is quantised the same way at each call.
- ``Codes.estimate(query)`` returns ``(estimate, bound)`` with, for every row r,
  ``|row_r . query - estimate_r| <= bound_r``: the bound is the exact algebra of the two
  roundings (``|k.w - k~.w~| <= |k~| |dw| + |dk| |w~| + |dk| |dw|``, Cauchy-Schwarz) plus
  a margin for float32 rounding in the exact product it stands in for (about 0.01 for
  MiniLM vectors). Callers that need exact order rescore exactly every row whose bound
  reaches the decision (``ranking``).
- Without onnxruntime (or if the kernel cannot be built), ``available()`` is False and
  callers use the float32 product alone: slower, never different.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

log = logging.getLogger(__name__)

F64 = npt.NDArray[np.float64]
# The exact product's own rounding: float32 over a few hundred dimensions stays far below.
FLOAT_MARGIN = 1e-4
_ZERO = 128  # the uint8 codes' zero point
_BLOCK = 8192  # rows quantised at a time


def _quantise(matrix: npt.NDArray[np.floating]) -> tuple[npt.NDArray[np.float64], F64]:
    """Each row rounded to int8 steps on its own scale: (codes in -127..127, scale)."""
    wide = np.atleast_2d(matrix).astype(np.float64)
    peak = np.abs(wide).max(axis=1) if wide.size else np.zeros(wide.shape[0])
    scale = np.where(peak > 0, 127.0 / np.where(peak > 0, peak, 1.0), 1.0)
    return np.rint(wide * scale[:, None]).clip(-127, 127), scale


@dataclass(eq=False)
class Codes:
    """A float matrix's rows as uint8 codes, with what the error bound needs."""

    codes: npt.NDArray[np.uint8]  # (n, dims): round(row * scale) + 128
    scale: F64  # (n,)
    error: F64  # (n,): |row - code / scale|
    norm: F64  # (n,): |code / scale|

    @classmethod
    def of(cls, matrix: npt.NDArray[np.float32]) -> Codes:
        # float32 in blocks: the codes are exact in it, the norms off by a few parts in ten
        # million (``FLOAT_MARGIN`` covers that), and no float64 copy of a large bank is made.
        n = matrix.shape[0]
        codes = np.empty(matrix.shape, dtype=np.uint8)
        scale, error, norm = np.empty(n), np.empty(n), np.empty(n)
        for start in range(0, n, _BLOCK):
            block = np.asarray(matrix[start : start + _BLOCK], dtype=np.float32)
            peak = np.abs(block).max(axis=1) if block.size else np.zeros(block.shape[0])
            step = np.where(peak > 0, 127.0 / np.where(peak > 0, peak, 1.0), 1.0)
            rounded = np.rint(block * step[:, None].astype(np.float32)).clip(-127, 127)
            back = rounded / step[:, None].astype(np.float32)
            end = start + block.shape[0]
            codes[start:end] = (rounded + _ZERO).astype(np.uint8)
            scale[start:end] = step.astype(np.float32)  # the step the codes were made with
            error[start:end] = np.linalg.norm(block - back, axis=1)
            norm[start:end] = np.linalg.norm(back, axis=1)
        return cls(codes, scale, error, norm)

    def estimate(self, query: npt.NDArray[np.float32]) -> tuple[F64, F64] | None:
        """(estimate, bound) of every row's product with ``query``; None without the kernel."""
        rounded, scale = _quantise(query.reshape(-1))
        back = rounded[0] / scale[0]
        q_error = float(np.linalg.norm(query.astype(np.float64).reshape(-1) - back))
        q_norm = float(np.linalg.norm(back))
        raw = _run(self.codes, rounded[0].astype(np.int8).reshape(-1, 1))
        if raw is None:
            return None
        dot = (raw - _ZERO * float(rounded.sum())) / (self.scale * scale[0])
        bound = self.norm * q_error + self.error * (q_norm + q_error) + FLOAT_MARGIN
        return dot, bound


def _run(rows: npt.NDArray[np.uint8], column: npt.NDArray[np.int8]) -> F64 | None:
    kernel = _kernel()
    if kernel is None:
        return None
    if rows.shape[0] == 0:
        return np.zeros(0)
    try:
        out = kernel.run(None, {"rows": rows, "query": column})[0]
    except Exception:  # noqa: BLE001 -- a kernel that fails is a kernel we do without
        log.exception("the int8 product failed; ranking falls back to float32")
        _disable()
        return None
    return np.asarray(out, dtype=np.float64).reshape(-1)


def available() -> bool:
    return _kernel() is not None


# -- the kernel: one MatMulInteger node, uint8 rows (n, d) x int8 query (d, 1) -> int32 (n, 1)

_lock = threading.Lock()
_state: dict[str, Any] = {}


def _disable() -> None:
    with _lock:
        _state["session"] = None


def _kernel() -> Any:
    with _lock:
        if "session" not in _state:
            _state["session"] = _build()
        return _state["session"]


def _build() -> Any:
    try:
        import onnxruntime as ort

        options = ort.SessionOptions()
        options.intra_op_num_threads = 1  # ranking runs beside the request's other work
        options.inter_op_num_threads = 1
        options.log_severity_level = 3
        return ort.InferenceSession(_model(), options, providers=["CPUExecutionProvider"])
    except Exception:  # noqa: BLE001 -- without the kernel, the float32 product does it all
        log.warning("no int8 kernel (onnxruntime); ranking many keys uses float32 only")
        return None


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
    node = _bytes(1, "rows") + _bytes(1, "query") + _bytes(2, "dots") + _bytes(4, "MatMulInteger")
    graph = (
        _bytes(1, node)  # GraphProto.node
        + _bytes(2, "int8_dots")  # .name
        + _bytes(11, _tensor("rows", _UINT8, ("n", "d")))  # .input
        + _bytes(11, _tensor("query", _INT8, ("d", 1)))
        + _bytes(12, _tensor("dots", _INT32, ("n", 1)))  # .output
    )
    opset = _bytes(1, "") + _int(2, 13)  # OperatorSetIdProto: default domain, version 13
    return _int(1, 8) + _bytes(7, graph) + _bytes(8, opset)  # ModelProto: ir_version 8
