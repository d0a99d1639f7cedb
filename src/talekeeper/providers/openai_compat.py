"""Any OpenAI-compatible HTTP endpoint.

Ollama, llama.cpp server, vLLM, LM Studio, KoboldCpp and hosted APIs all speak it.

Invariants:

- All providers share one ``httpx.AsyncClient`` (connection pooling); each
  request carries its own timeout and, if configured, a bearer key. Credentials
  in the URL (``user:password@``) are sent as HTTP basic auth and appear in no
  name, message or log: the provider knows its URL only without them.
- Redirects are never followed (a key or a request must not travel to a host
  nobody configured): a 3xx answer is an error that says where it points.
- Every failure leaves here as a ``ProviderError`` subclass whose message names
  the endpoint and says what to try (``endpoint_errors``): refused connection,
  rejected key, unknown model (with the models the endpoint does offer),
  timeout, a redirect, a body that is not the protocol (bad JSON, bad encoding,
  broken framing, too large, too deep), or a stream cut off before its end. No
  ``httpx`` error, and nothing an endpoint can send, escapes as anything else.
- The endpoint's own error text is repeated only when ``echo_errors`` is set
  (the saved endpoint); a URL being probed gets its status and what it means.
- A body is read no further than ``MAX_RESPONSE_BYTES`` (a streamed line
  ``MAX_EVENT_CHARS``): beyond that the answer is refused.
- A stream has ended properly only on ``data: [DONE]`` or a chunk with a
  ``finish_reason``; a connection that closes before either is a cut stream.
"""

from __future__ import annotations

import functools
import json
import re
import ssl
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import httpx

from talekeeper.core.errors import ProviderError, ProviderModelNotFound
from talekeeper.core.tokens import BpeCounter, TokenCounter
from talekeeper.providers.base import (
    Chunk,
    Completion,
    CompletionRequest,
    Embeddings,
    ProviderInfo,
    split_userinfo,
)
from talekeeper.providers.endpoint_errors import (
    UNUSABLE_REQUEST,
    Failures,
    about_model,
    dump,
)

MAX_RESPONSE_BYTES = 32 * 2**20  # a batch of 32 embeddings of 4,096 dimensions is ~3 MiB
MAX_EVENT_CHARS = 2**20  # one streamed line
MAX_MODEL_NAME = 200

# Everything sending a request and reading its answer can raise.
EXCHANGE_ERRORS = (httpx.HTTPError, httpx.StreamError, *UNUSABLE_REQUEST)
_LINE_BREAK = re.compile(r"\r\n|\r|\n")


def shared_client() -> httpx.AsyncClient:
    """The one HTTP client of a runtime; per-request timeouts override this default."""
    return httpx.AsyncClient(
        timeout=httpx.Timeout(120.0), follow_redirects=False, verify=_certificates()
    )


@functools.cache
def _certificates() -> ssl.SSLContext:
    """httpx's own verifying context (its CA bundle, ``SSL_CERT_FILE`` honoured), made once
    a process: loading the bundle takes ~20 ms, and every runtime built (a start, a
    changed endpoint) made a new one."""
    return httpx.create_ssl_context()


@dataclass(frozen=True)
class _Answer:
    status: int
    location: str  # a redirect's Location header, "" otherwise
    content: bytes


class OpenAICompatProvider:
    def __init__(
        self,
        client: httpx.AsyncClient,
        base_url: str,
        *,
        api_key: str = "",
        timeout: float = 120.0,
        echo_errors: bool = True,
    ) -> None:
        self.client = client
        self.base_url, userinfo = split_userinfo(base_url.rstrip("/"))
        self._auth = httpx.BasicAuth(*userinfo) if userinfo else None
        self.api_key = api_key
        self.timeout = timeout
        self.echo_errors = echo_errors
        self.info = ProviderInfo(name=self.base_url)
        self.fail = Failures(self.base_url, timeout, echo_errors)
        self._counter = BpeCounter()
        try:  # httpx leaves a port out of range to the socket, which fails in a task group
            urlsplit(self.base_url).port  # noqa: B018 - reading it checks the URL
            self._bad_url = ""
        except ValueError as exc:
            self._bad_url = str(exc)

    # -- protocol -----------------------------------------------------------------------

    async def complete(self, request: CompletionRequest) -> Completion:
        path, body = self._completion_body(request, stream=False)
        data = await self._post_json(path, body, model=request.model)
        chat = request.mode == "chat"
        try:
            choice = data["choices"][0]
            text = (choice["message"] if chat else choice)["content" if chat else "text"]
        except (KeyError, IndexError, TypeError):
            missing = "the reply has no choices[0] with generated text"
            raise self.fail.protocol(path, missing) from None
        if not isinstance(text, str):
            text = "" if text is None else dump(text)
        return Completion(
            text=text,
            model=_model_name(data.get("model"), request.model),
            finish_reason=_reason(choice.get("finish_reason")),
            tokens_in=_count(data.get("usage"), "prompt_tokens"),
            tokens_out=_count(data.get("usage"), "completion_tokens"),
            tokens_evaluated=_evaluated(data.get("usage"), data.get("timings")),
        )

    async def stream(self, request: CompletionRequest) -> AsyncIterator[Chunk]:
        path, body = self._completion_body(request, stream=True)
        parts: list[str] = []
        finish: str | None = None
        usage: Any = None
        timings: Any = None
        model = request.model
        ended = False
        refused: _Answer | None = None
        answered = False  # the head came: a connection that breaks now cuts the reply
        try:
            async with self._open("POST", path, body) as response:
                answered = True
                if response.status_code >= 300:
                    refused = await self._answer(response, path)
                else:
                    async for payload in self._data_lines(response, path):
                        if payload == "[DONE]":
                            ended = True
                            break
                        event = self._parse_event(path, payload)
                        model = _model_name(event.get("model"), model)
                        usage = event.get("usage") or usage
                        timings = event.get("timings") or timings
                        piece, reason = _event_piece(request, event)
                        finish = reason or finish
                        if piece:
                            parts.append(piece)
                            yield Chunk(text=piece)
        except EXCHANGE_ERRORS as exc:
            raise self.fail.exchange(exc, path, len(parts) if answered else None) from None
        if refused is not None:
            await self._raise_for_status(refused, path, request.model)
        if not ended and finish is None:
            raise self.fail.cut(path, len(parts))
        yield Chunk(
            text="",
            done=Completion(
                text="".join(parts),
                model=model,
                finish_reason=finish,
                tokens_in=_count(usage, "prompt_tokens"),
                tokens_out=_count(usage, "completion_tokens"),
                tokens_evaluated=_evaluated(usage, timings),
            ),
        )

    async def embed(self, texts: list[str], model: str) -> Embeddings:
        path = "/embeddings"
        data = await self._post_json(path, {"model": model, "input": texts}, model=model)
        try:
            rows = sorted(data["data"], key=lambda row: row.get("index", 0))
            vectors = [[float(x) for x in row["embedding"]] for row in rows]
        except (KeyError, TypeError, ValueError, AttributeError, OverflowError):
            raise self.fail.protocol(path, "the reply has no data[].embedding lists") from None
        if len(vectors) != len(texts):
            raise self.fail.protocol(
                path, f"{len(texts)} texts were sent but {len(vectors)} came back"
            )
        return Embeddings(
            vectors=vectors, model=model, tokens_in=_count(data.get("usage"), "prompt_tokens")
        )

    async def list_models(self) -> list[str]:
        path = "/models"
        answer = await self._fetch("GET", path, None)
        await self._raise_for_status(answer, path, None)
        rows = self._json(answer, path).get("data")
        if not isinstance(rows, list) or not all(
            isinstance(row, dict) and isinstance(row.get("id"), (str, int)) for row in rows
        ):
            raise self.fail.protocol(path, "the reply has no data[].id list")
        return [str(row["id"]) for row in rows]

    def token_counter(self, model: str) -> TokenCounter:
        return self._counter

    async def aclose(self) -> None:
        """The shared client belongs to the composition root, which closes it."""

    # -- request building ---------------------------------------------------------------

    def _completion_body(self, request: CompletionRequest, *, stream: bool) -> tuple[str, Any]:
        body: dict[str, Any] = {
            "model": request.model,
            "max_tokens": request.max_tokens,
            "temperature": request.temperature,
            "top_p": request.top_p,
            "stream": stream,
        }
        if request.stop:
            body["stop"] = list(request.stop)
        if stream:
            body["stream_options"] = {"include_usage": True}
        if request.mode == "chat":
            body["messages"] = [{"role": m.role, "content": m.content} for m in request.messages]
            return "/chat/completions", body
        body["prompt"] = request.prompt
        return "/completions", body

    def _headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.api_key}"} if self.api_key else {}

    # -- transport ----------------------------------------------------------------------

    def _open(self, method: str, path: str, body: Any) -> Any:
        """The exchange as a context manager: the answer's head is read, its body is not."""
        if self._bad_url:
            raise httpx.InvalidURL(self._bad_url)
        return self.client.stream(
            method,
            self.base_url + path,
            json=body,
            headers=self._headers(),
            auth=self._auth,
            timeout=self.timeout,
            follow_redirects=False,
        )

    async def _fetch(self, method: str, path: str, body: Any) -> _Answer:
        try:
            async with self._open(method, path, body) as response:
                return await self._answer(response, path)
        except EXCHANGE_ERRORS as exc:
            raise self.fail.exchange(exc, path, None) from None

    async def _answer(self, response: httpx.Response, path: str) -> _Answer:
        """The status and the body, read no further than ``MAX_RESPONSE_BYTES``."""
        if 300 <= response.status_code < 400:  # never followed, so its body is not needed
            return _Answer(response.status_code, response.headers.get("location", ""), b"")
        chunks: list[bytes] = []
        size = 0
        async for chunk in response.aiter_bytes():
            size += len(chunk)
            if size > MAX_RESPONSE_BYTES:
                limit = f"the reply is larger than {MAX_RESPONSE_BYTES // 2**20} MiB"
                raise self.fail.protocol(path, limit)
            chunks.append(chunk)
        return _Answer(response.status_code, "", b"".join(chunks))

    async def _data_lines(self, response: httpx.Response, path: str) -> AsyncIterator[str]:
        """The payloads of the stream's ``data:`` lines, each line at most MAX_EVENT_CHARS."""
        buffer = ""
        seen = False
        async for text in response.aiter_text():
            buffer += text
            *lines, buffer = _LINE_BREAK.split(buffer)
            for line in lines:
                if line.startswith("data:"):
                    seen = True
                    yield line[5:].strip()
            if len(buffer) > MAX_EVENT_CHARS:
                limit = f"a streamed line is over {MAX_EVENT_CHARS:,} characters"
                raise self.fail.protocol(path, limit)
        if buffer.startswith("data:"):
            yield buffer[5:].strip()
        elif not seen:
            raise self.fail.protocol(path, "the streamed reply holds no 'data:' events")

    async def _post_json(self, path: str, body: Any, *, model: str) -> dict[str, Any]:
        answer = await self._fetch("POST", path, body)
        await self._raise_for_status(answer, path, model)
        return self._json(answer, path)

    def _json(self, answer: _Answer, path: str) -> dict[str, Any]:
        return self._object(path, answer.content, "the reply")

    def _parse_event(self, path: str, payload: str) -> dict[str, Any]:
        return self._object(path, payload, "a streamed event")

    def _object(self, path: str, text: str | bytes, what: str) -> dict[str, Any]:
        try:
            data = json.loads(text)
        except (ValueError, RecursionError):  # bad JSON, bad UTF-8, nesting past any depth
            raise self.fail.protocol(path, f"{what} is not valid JSON") from None
        if not isinstance(data, dict):
            raise self.fail.protocol(path, f"{what} is not a JSON object")
        return data

    async def _raise_for_status(self, answer: _Answer, path: str, model: str | None) -> None:
        status = answer.status
        if status < 300:
            return
        if status < 400:
            raise self.fail.redirect(path, status, answer.location)
        if model and status in (400, 404) and about_model(answer.content, model):
            offered = await self._offered_models()
            raise ProviderModelNotFound(
                f"The endpoint at {self.base_url} has no model named {model!r}. It offers: "
                f"{offered}. Pick one of those in settings (or pull the model on the server "
                "first)."
            )
        raise self.fail.refused(path, status, answer.content)

    async def _offered_models(self) -> str:
        try:
            names = await self.list_models()
        except ProviderError:
            return "(the model list could not be read)"
        return ", ".join(names) if names else "(none)"


def _event_piece(request: CompletionRequest, event: dict[str, Any]) -> tuple[str, str | None]:
    """The text and finish reason of one streamed event; odd shapes count as neither."""
    choices = event.get("choices")
    choice = choices[0] if isinstance(choices, list) and choices else None
    if not isinstance(choice, dict):
        return "", None
    chat = request.mode == "chat"
    holder = choice.get("delta") if chat else choice
    piece = holder.get("content" if chat else "text") if isinstance(holder, dict) else None
    return piece if isinstance(piece, str) else "", _reason(choice.get("finish_reason"))


def _evaluated(usage: Any, timings: Any) -> int | None:
    """What the server evaluated of the prompt, when it says: llama-server's
    ``timings.prompt_n``, else an OpenAI-style ``prompt_tokens_details.cached_tokens``
    (vLLM, hosted APIs) taken from ``prompt_tokens``; None when it says neither."""
    evaluated = _count(timings, "prompt_n")
    if evaluated is not None:
        return evaluated
    details = usage.get("prompt_tokens_details") if isinstance(usage, dict) else None
    cached, prompt = _count(details, "cached_tokens"), _count(usage, "prompt_tokens")
    if cached is None or prompt is None or cached > prompt:
        return None
    return prompt - cached


def _count(usage: Any, key: str) -> int | None:
    """A token count from a usage object, or ``None`` when it is not a count."""
    value = usage.get(key) if isinstance(usage, dict) else None
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    return None


def _reason(value: Any) -> str | None:
    return value[:40] if isinstance(value, str) and value else None


def _model_name(value: Any, fallback: str) -> str:
    return value if isinstance(value, str) and 0 < len(value) <= MAX_MODEL_NAME else fallback
