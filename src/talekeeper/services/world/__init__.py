"""The world as the story states it (docs/world.md): events attached to actions, projected
along the current path. ``names`` matches names (pure), ``projection`` folds events into
the state (pure), ``events`` reads and writes them in the caller's unit of work."""
