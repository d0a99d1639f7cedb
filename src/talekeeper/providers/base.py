"""The provider protocol: every model, local or remote, is spoken to through it.

A provider can complete (chat messages or a completion prompt, streamed or
not), embed a batch of texts, and list its models. Errors are always
``talekeeper.core.errors.ProviderError`` subclasses (or ``ModelUnavailable``
for a packaged model that is missing) whose message names the endpoint and the
next step; nothing else escapes a provider.

A provider's name, its messages and anything logged about it carry an endpoint URL
only without its credentials: ``without_userinfo`` takes the ``user:password@`` out.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Literal, Protocol
from urllib.parse import unquote

from talekeeper.core.tokens import TokenCounter

Mode = Literal["chat", "completion"]

# The authority of a URL runs to the first "/", "?" or "#"; its userinfo is everything
# before the last "@" in it (a password may itself hold a percent-encoded "@").
_USERINFO = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*://)([^/?#]*)@")


def split_userinfo(url: str) -> tuple[str, tuple[str, str] | None]:
    """``url`` without its ``user:password@``, and that user name and password (decoded),
    or ``None`` when the URL carries none."""
    found = _USERINFO.match(url)
    if found is None:
        return url, None
    user, _, password = found.group(2).partition(":")
    return found.group(1) + url[found.end() :], (unquote(user), unquote(password))


def without_userinfo(url: str) -> str:
    """``url`` as it may be shown or logged: its credentials, if any, taken out."""
    return split_userinfo(url)[0]


@dataclass(frozen=True)
class Message:
    role: Literal["system", "user", "assistant"]
    content: str


@dataclass(frozen=True)
class CompletionRequest:
    """One generation. ``messages`` in chat mode, ``prompt`` in completion mode."""

    model: str
    mode: Mode = "chat"
    messages: tuple[Message, ...] = ()
    prompt: str = ""
    max_tokens: int = 200
    temperature: float = 0.8
    top_p: float = 0.95
    stop: tuple[str, ...] = ()
    # The story's next reply (not a memory, a summary or a test): the embedded placeholder
    # repairs its voice (``providers.voice``); every other provider ignores it.
    narration: bool = False

    def __post_init__(self) -> None:
        if self.mode == "chat" and not self.messages:
            raise ValueError("a chat request needs messages")
        if self.mode == "completion" and not self.prompt:
            raise ValueError("a completion request needs a prompt")


@dataclass(frozen=True)
class Completion:
    text: str
    model: str
    finish_reason: str | None = None
    tokens_in: int | None = None
    tokens_out: int | None = None
    # Of the prompt, what the server had to evaluate after its cached prefix, when it says
    # (llama-server's ``timings.prompt_n``; ``prompt_tokens`` less ``cached_tokens``).
    tokens_evaluated: int | None = None
    # The repairs the embedded placeholder made to its reply (``providers.voice.Edit``).
    repairs: tuple[str, ...] = ()


@dataclass(frozen=True)
class Chunk:
    """A piece of a streamed reply. The last chunk has ``done`` set and empty ``text``."""

    text: str
    done: Completion | None = None


@dataclass(frozen=True)
class Embeddings:
    vectors: list[list[float]]
    model: str
    tokens_in: int | None = None


@dataclass(frozen=True)
class ProviderInfo:
    """What a provider is, for logs, health and the UI."""

    name: str  # "embedded" or the endpoint URL, without its credentials
    placeholder: bool = False  # True for the tiny embedded narrator: the UI says so
    reserved_tokens: int = 0  # tokens the provider adds to every prompt (an example turn)
    notes: list[str] = field(default_factory=list)


class Provider(Protocol):
    info: ProviderInfo

    async def complete(self, request: CompletionRequest) -> Completion: ...

    def stream(self, request: CompletionRequest) -> AsyncIterator[Chunk]: ...

    async def embed(self, texts: list[str], model: str) -> Embeddings: ...

    async def list_models(self) -> list[str]: ...

    def token_counter(self, model: str) -> TokenCounter: ...

    async def aclose(self) -> None: ...
