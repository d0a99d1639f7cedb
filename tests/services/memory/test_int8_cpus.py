"""The int8 ranking on other CPUs' real kernels, not models of them.

onnxruntime picks its integer kernel by the CPU's features. QEMU's user-mode emulator
(``qemu-x86_64``, Debian's qemu-user) runs this same Python and onnxruntime on an emulated
CPU of our choosing, so onnxruntime's own kernel for that CPU computes:

- Haswell: AVX2 without AVX-512, the kernel that sums neighbouring products in saturating
  16-bit pairs (with the whole int8 range, the reading left its bound there);
- Nehalem: SSE4.1 only, a kernel that widens to 16 bits first (exact).

On each, the kernel is first shown to be the one meant (what it makes of full-range codes),
then the int8 tests run there on it: the bound, one estimate for every kernel, and the
large banks ranked as float32 alone ranks them. Skipped where qemu-x86_64 is missing (CI
installs it and sets ``REQUIRE_QEMU_FOR_TESTS``, so there a missing emulator fails).
"""

from __future__ import annotations

import os
import platform
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from talekeeper.services.memory.int8 import FullRange

pytestmark = pytest.mark.no_database

ROOT = Path(__file__).resolve().parents[3]
QEMU = shutil.which("qemu-x86_64")
REQUIRE_ENV = "REQUIRE_QEMU_FOR_TESTS"
# Each emulated CPU: what its kernel makes of full-range codes, and which of the int8 tests
# run there on it (those on the machine's own kernel: the models run natively already).
# The large banks run on AVX2's kernel, the one that used to rank them wrong: the first
# bank only, since with the whole int8 range every one of them was ranked wrong (the
# native test of the whole range shows it on all four) and each costs about 18 s emulated.
CPUS = {
    "Haswell": (
        FullRange.SATURATES_PAIRS,
        "(this-cpu and not large) or every_kernel or (large and this-cpu-0)",
    ),
    "Nehalem": (FullRange.EXACT, "bound and this-cpu or every_kernel"),
}


def emulated(cpu: str, *args: str) -> subprocess.CompletedProcess[str]:
    assert QEMU is not None
    return subprocess.run(
        [QEMU, "-cpu", cpu, sys.executable, *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )


@pytest.mark.parametrize("cpu", CPUS)
def test_the_int8_ranking_on_an_emulated_cpu_s_own_kernel(cpu: str) -> None:
    if platform.machine() != "x86_64":  # emulating x86 needs an x86 Python too
        pytest.skip(f"the emulated CPUs are x86-64 ones; this machine is {platform.machine()}")
    if QEMU is None:
        why = "qemu-x86_64 is not installed (Debian or Ubuntu: apt-get install qemu-user)"
        if os.environ.get(REQUIRE_ENV):
            pytest.fail(f"{REQUIRE_ENV} is set but {why}")
        pytest.skip(why)
    probe = emulated(
        cpu,
        "-c",
        "from talekeeper.services.memory import int8; r = int8.describe();"
        "print(r.full_range.name if r.full_range else 'NONE'); print(r.line())",
    )
    assert probe.returncode == 0, probe.stderr[-3000:]
    kind, line = probe.stdout.split("\n", 1)
    full_range, selection = CPUS[cpu]
    assert kind == full_range.name, line  # onnxruntime really chose that CPU's kernel
    tests = emulated(
        cpu, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--noconftest",
        "tests/services/memory/test_int8.py", "-k", selection,
    )  # fmt: skip
    assert tests.returncode == 0, tests.stdout[-6000:]
    assert " passed" in tests.stdout and "skipped" not in tests.stdout, tests.stdout[-2000:]
