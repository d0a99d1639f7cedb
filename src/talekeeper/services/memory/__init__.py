"""The memory system (docs/memory.md). The story engine speaks to it only through ``base``.

Three floors; a floor imports only from the floors below it.

1. Pure rules (no session, no I/O; the same input gives the same answer): ``writer``
   (which blocks are due, a block's text and lineage), ``eviction``, ``extractive`` and
   its ``prose``, ``evidence``, ``terms``, ``authority``, ``excerpt``, ``cast``, ``prompts``, and
   ranking's ``ranking``, ``arrays``, ``scoring``, ``keyscores``, ``fusion``,
   ``selection``, ``keyset`` and ``int8``.
2. Request-time changes, inside the caller's unit of work (nothing here opens one of
   its own but retrieval's short read, and nothing calls a model but retrieval's
   embedding of the query): ``base`` (the engine's seam and its types), ``service``
   (``MemorySystem``, behind that seam), ``retrieval``, ``changes``, ``manage``,
   ``bank``, ``cache``, ``scene``, ``summary`` (the player's side of the Story Summary),
   and ``source`` (reading the story a memory comes from, for both floors). Work is
   asked for through ``services.background.port``, whoever runs it.
3. Background passes: ``passes`` (each pass through one seam, one runner for a run),
   run out of the turn by an adapter of that port.
"""
