"""What the tests and the benchmarks both stand on, kept out of the product itself.

- ``double``: a real OpenAI-compatible HTTP server on loopback, the test double for
  every model (scripted replies, recorded requests, deterministic embeddings,
  injectable faults).
- ``live``: the real app served by uvicorn on loopback, in a thread.
- ``pg``: a throwaway PostgreSQL server for the database tests' second pass.

Invariant: ``talekeeper`` never imports this package (an import-linter contract), so
nothing here can reach a player.
"""
