"""The models of a turn (``ModelSet``) for rendering a context: a narrator on an endpoint
that is never called (port 9), no summary or embedding model, in the given API mode and
context size."""

from __future__ import annotations

import httpx

from talekeeper.providers.openai_compat import OpenAICompatProvider
from talekeeper.services.endpoints.ai_calls import LoggedModel
from talekeeper.services.endpoints.models import ContextLayout, ModelSet


def models(mode: str, context_tokens: int, layout: ContextLayout = ContextLayout.CACHE) -> ModelSet:
    provider = OpenAICompatProvider(httpx.AsyncClient(), "http://127.0.0.1:9/v1")
    narrator = LoggedModel(provider, "golden-narrator", lambda record: None)
    return ModelSet(
        narrator=narrator,
        summary=None,
        embedding=None,
        mode=mode,
        context_tokens=context_tokens,
        reply_tokens=150,
        temperature=0.7,
        top_p=0.9,
        memory_top_k=5,
        bank_capacity=200,
        knowledge_top_k=3,
        context_layout=layout,
    )
