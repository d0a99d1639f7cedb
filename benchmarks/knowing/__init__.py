"""The leak-rate benchmark: who knows what, on generated scenes (``run``)."""
