"""Talekeeper: a self-hosted AI interactive-fiction engine.

Importing this package does nothing beyond defining the version: no engine, no
settings, no model loading. ``talekeeper.web.app.create_app`` and the CLI build
everything explicitly.
"""

__version__ = "0.1.0"
