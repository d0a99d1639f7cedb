"""The concurrency benchmark (8 players; 20 clients of mixed traffic):
``python -m benchmarks.concurrency.run``."""
