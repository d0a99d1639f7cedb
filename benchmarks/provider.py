"""The configured narrator and embedder's speed (``talekeeper bench provider``), written
to ``docs/benchmarks.md``.

    .venv/bin/python -m benchmarks.provider [--write docs/benchmarks.md]

The figures are the command's own (``services.endpoints.bench``), on the settings of the
environment (``TALEKEEPER_MODEL`` and the rest; the embedded default when none are set).
The embedded narrator's native llama.cpp build keeps a section of its own beside the
portable one's, so the two can be compared.
"""

from __future__ import annotations

import asyncio
import sys

from benchmarks.kit.report import arguments, machine_description, publish

from talekeeper.bootstrap import Runtime
from talekeeper.services.endpoints.bench import ProviderBench, bench_provider
from talekeeper.settings import load_settings


async def measure() -> ProviderBench:
    settings = load_settings()
    runtime = Runtime.build(settings)
    try:
        models = runtime.models_for(settings, runtime.local_user_id())
        print(f"benchmarking {models.names()} ...", file=sys.stderr)
        return await bench_provider(models)
    finally:
        await runtime.aclose()


def main(argv: list[str] | None = None) -> int:
    args = arguments(__doc__.splitlines()[0] if __doc__ else "").parse_args(argv)
    result = asyncio.run(measure())
    native = result.narrator == "embedded" and result.build[0] == "native"
    key = f"provider-{result.narrator}" + ("-native" if native else "")
    title = f"Provider: {result.narrator}" + (" (native llama.cpp build)" if native else "")
    publish(result.markdown(machine_description()), args.write, key, title)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
