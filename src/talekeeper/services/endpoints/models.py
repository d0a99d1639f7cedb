"""Which model does what, for one user's effective settings.

A ``ModelSet`` holds the narrator, the summary model (``None`` when the
summary model is ``extractive``: no model at all) and the embedder (``None``
when embeddings are ``none``), each a ``LoggedModel``. The composition root
chooses the providers; services only ever see this set.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from talekeeper.services.endpoints.ai_calls import LoggedModel


class ContextLayout(StrEnum):
    """Where the sections go: ``cache`` changes the prompt at its end, ``classic`` keeps
    every fixed section above the history."""

    CACHE = "cache"
    CLASSIC = "classic"


@dataclass(frozen=True)
class ModelSet:
    narrator: LoggedModel
    summary: LoggedModel | None
    embedding: LoggedModel | None
    mode: str  # "chat" or "completion"
    context_tokens: int
    reply_tokens: int
    temperature: float
    top_p: float
    memory_top_k: int
    bank_capacity: int
    knowledge_top_k: int
    context_layout: ContextLayout
    world: LoggedModel | None = None  # reads each reply, writes card entries; None: rules

    def names(self) -> dict[str, str]:
        return {
            "narrator": self.narrator.model,
            "summary": self.summary.model if self.summary else "extractive",
            "embedding": self.embedding.model if self.embedding else "none",
            "world": self.world.model if self.world else "rules",
        }
