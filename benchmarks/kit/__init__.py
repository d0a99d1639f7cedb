"""What every benchmark stands on, so that a study is only its question and its table.

- ``report``: the one writer of ``docs/benchmarks.md`` sections, and the run's
  footer (machine, load average, time, command).
- ``runtime``: a real ``Runtime`` on a migrated SQLite file in a temporary folder,
  with the loopback model double as narrator and summary model and a chosen embedder.
- ``play``: a turn through ``TurnRunner.begin``/``run``, as the web app plays it,
  its reply scripted on the double and checked.
- ``http``: "N players over HTTP": the real app on uvicorn on loopback, clients
  started together, failures gathered, the wait for background work.
- ``providers``: a provider answering in no time (for costs that are not the model's),
  and Memory Bank rows for bulk inserts.
- ``names``: invented names for generated stories and books.

The model double itself is ``talekeeper_testkit.double``, shared with the tests.
"""
