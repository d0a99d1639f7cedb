"""What a background pass works with: the adventure's id, its models, the bank's cache.

``Work`` holds no session and no factory of sessions: a pass gets its sessions from the
seam (``seam.run_pass``), so it cannot hold one open while it calls a model.

Invariants:

- Memories and summaries are written by the summary model when the adventure has
  one, else by the extractive writer; ``writer`` names which, and is what a row
  records as its writer.
- A model's empty answer is a failure of the pass (recorded, retried by the next
  run), never an empty memory or summary.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from talekeeper.core.errors import ProviderError
from talekeeper.core.tokens import CharCounter, TokenCounter
from talekeeper.providers.base import CompletionRequest
from talekeeper.services.endpoints.ai_calls import CallKind
from talekeeper.services.endpoints.models import ModelSet
from talekeeper.services.memory import extractive
from talekeeper.services.memory.cache import BankCache
from talekeeper.services.memory.excerpt import excerpt
from talekeeper.services.memory.prompts import clean_memory, memory_request
from talekeeper.services.memory.source import Material


@dataclass(frozen=True)
class Work:
    """One background run for one adventure."""

    adventure_id: int
    models: ModelSet
    cache: BankCache

    @property
    def writer(self) -> str:
        return self.models.summary.model if self.models.summary else "extractive"

    def counter(self) -> TokenCounter:
        summary = self.models.summary
        if summary is None:
            return CharCounter()
        return summary.provider.token_counter(summary.model)

    async def ask(
        self, request: CompletionRequest, kind: CallKind, clean: Callable[[str], str], what: str
    ) -> str:
        """One call to the summary model, its answer cleaned (``what`` names it in the
        error when nothing is left)."""
        model = self.models.summary
        assert model is not None
        result = await model.complete(request, kind=kind, adventure_id=self.adventure_id)
        text = clean(result.text)
        if not text:
            raise ProviderError(f"The summary model ({model.model}) wrote an empty {what}.")
        return text

    async def memory_text(self, facts: Material, block: str, lead: str = "") -> str:
        """One memory of ``block``: by the summary model, or extractive when there is none.
        ``lead``: the player's action just before a block that opens on its answer (the
        extractive writer weighs what came of it; the model reads the block alone)."""
        model = self.models.summary
        if model is None:
            return extractive.write_memory(block, facts.protagonist, facts.salient(), lead)
        counter = self.counter()
        request = memory_request(
            excerpt(block, counter),
            facts.cast(block, counter),
            model=model.model,
            mode=self.models.mode,
        )
        return await self.ask(request, "memory", clean_memory, "memory")
