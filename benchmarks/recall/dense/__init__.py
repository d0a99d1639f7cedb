"""The dense recall benchmark: every action states facts; does the stating sentence reach
the narrator? (``python -m benchmarks.recall.dense.run``)"""
