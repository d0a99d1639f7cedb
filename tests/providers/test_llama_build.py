"""Which llama.cpp build the embedded narrator runs, as `talekeeper bench provider` reports it
(the Makefile's LLAMA_BUILD=portable|native)."""

from __future__ import annotations

from talekeeper.providers.embedded_models import PORTABLE_FEATURES, build_of, llama_build

PORTABLE = (
    "CPU : SSE3 = 1 | SSSE3 = 1 | AVX = 1 | AVX2 = 1 | F16C = 1 | FMA = 1 | BMI2 = 1 | "
    "LLAMAFILE = 1 | OPENMP = 1 | REPACK = 1 | "
)
NATIVE = PORTABLE.replace("BMI2 = 1 |", "BMI2 = 1 | AVX512 = 1 | AVX512_VNNI = 1 |")


def test_the_portable_baseline_is_portable_and_anything_more_is_native() -> None:
    assert build_of(PORTABLE) == (
        "portable",
        ["SSE3", "SSSE3", "AVX", "AVX2", "F16C", "FMA", "BMI2"],
    )
    kind, features = build_of(NATIVE)
    assert kind == "native" and {"AVX512", "AVX512_VNNI"} <= set(features)
    assert "OPENMP" not in features  # not an instruction set
    assert build_of("CPU : SSE3 = 1 | AVX512 = 0 |") == ("portable", ["SSE3"])


def test_the_installed_build_is_read_from_llama_cpp_itself() -> None:
    kind, features = llama_build()
    assert kind in ("portable", "native")
    assert "AVX2" in features  # both builds of this project's x86-64 have at least this
    assert (kind == "native") == bool(set(features) - PORTABLE_FEATURES)
