"""The memory system (memory.md). The story engine speaks to it only through ``base``."""
