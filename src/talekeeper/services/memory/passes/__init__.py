"""The background passes: the third floor of the memory system (see ``services.memory``).

- ``seam``: the ``Pass`` protocol (read, generate, save) and ``run_pass``, the only
  code that opens a pass's units of work;
- ``runner``: one run for one adventure (its models, the order of the passes, the
  recorded state of each kind), which an adapter of ``services.background.port`` runs
  out of the turn (``services.background.worker`` or ``services.background.queue``);
- ``work``: what a pass generates with (the models, the cache), with no session;
- one module per pass: ``refresh`` (stale memories), ``blocks`` (new memories),
  ``summarize`` (the Story Summary), ``embed`` (vectors and evidence keys), ``evict``
  (capacity).
"""
