"""Recall on dense generated stories (``python -m benchmarks.recall.dense.run``)."""
