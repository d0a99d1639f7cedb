"""The knowledge library's benchmark: ``python -m benchmarks.library.run``."""
