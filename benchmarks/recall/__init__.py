"""The recall benchmark (issue 6, items 1-3): ``python -m benchmarks.recall.run``."""
