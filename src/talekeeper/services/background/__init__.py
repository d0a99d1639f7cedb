"""Background work, whatever it works on: the port the services ask through
(``port.BackgroundWork``), its two adapters (``worker.Worker`` over the SQLite outbox,
``queue.QueuedWork`` over PostgreSQL's shared queue) and the dispatch of each subject's run
to the service that owns it (``port.dispatch``). See ``docs/architecture.md``."""
