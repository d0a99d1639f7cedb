"""Units of work, for the entry points: a write (``session_scope``) or a read
(``read_scope``) over the runtime's session factory, and the translation of a database
error that means "busy" into ``DatabaseBusy``.

The entry points name these here rather than in ``storage.db``: they never import
storage (an import-linter contract), and the semantics stay storage's own.
"""

from talekeeper.storage.db import busy_error, read_scope, session_scope

__all__ = ["busy_error", "read_scope", "session_scope"]
