"""What every benchmark stands on, so that a study is only its question and its table.

- ``report``: the one writer of ``docs/benchmarks.md`` sections, and the run's
  footer (machine, load average, time, command).
- ``runtime``: a real ``Runtime`` on a migrated SQLite file in a temporary folder,
  with the loopback model double as narrator and summary model and a chosen embedder.
- ``play``: "play N turns" through ``TurnRunner.begin``/``run``, as the web app does,
  with undo and fork through ``Story``.
- ``http``: "N players over HTTP": the real app on uvicorn on loopback, clients
  started together, failures gathered, the wait for background work.
- ``providers``: the benchmarks' fake models that are not the double (a provider
  answering in no time, a hashed embedder).

The model double itself is ``talekeeper_testkit.double``, shared with the tests.
"""
