"""Scale-out: one process on SQLite against app processes and workers on PostgreSQL."""
