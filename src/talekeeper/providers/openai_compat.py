"""Any OpenAI-compatible HTTP endpoint.

Ollama, llama.cpp server, vLLM, LM Studio, KoboldCpp and hosted APIs all speak it.

Invariants:

- All providers share one ``httpx.AsyncClient`` (connection pooling); each
  request carries its own timeout and, if configured, a bearer key.
- Every failure leaves here as a ``ProviderError`` subclass whose message names
  the endpoint and says what to try: refused connection, rejected key, unknown
  model (with the models the endpoint does offer), timeout, a body that is not
  the protocol, or a stream cut off before its end.
- A stream has ended properly only on ``data: [DONE]`` or a chunk with a
  ``finish_reason``; a connection that closes before either is a cut stream.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any, NoReturn

import httpx

from talekeeper.core.errors import (
    ProviderAuthError,
    ProviderError,
    ProviderModelNotFound,
    ProviderProtocolError,
    ProviderTimeout,
    ProviderUnreachable,
)
from talekeeper.core.tokens import BpeCounter, TokenCounter
from talekeeper.providers.base import (
    Chunk,
    Completion,
    CompletionRequest,
    Embeddings,
    ProviderInfo,
)

MAX_ERROR_DETAIL = 300  # characters of an endpoint's own error text we repeat to the player


def shared_client() -> httpx.AsyncClient:
    """The one HTTP client of the process; per-request timeouts override this default."""
    return httpx.AsyncClient(timeout=httpx.Timeout(120.0), follow_redirects=True)


# Requests that cannot even be sent: a malformed URL, a port out of range, a key that no
# header can carry. Settings refuse these, but an endpoint's answer must never be a crash.
UNUSABLE_REQUEST = (httpx.InvalidURL, httpx.UnsupportedProtocol, ValueError, UnicodeError)


class OpenAICompatProvider:
    def __init__(
        self,
        client: httpx.AsyncClient,
        base_url: str,
        *,
        api_key: str = "",
        timeout: float = 120.0,
    ) -> None:
        self.client = client
        self.base_url = base_url.rstrip("/")
        self.api_key = api_key
        self.timeout = timeout
        self.info = ProviderInfo(name=self.base_url)
        self._counter = BpeCounter()

    # -- protocol -----------------------------------------------------------------------

    async def complete(self, request: CompletionRequest) -> Completion:
        path, body = self._completion_body(request, stream=False)
        data = await self._post_json(path, body, model=request.model)
        try:
            choice = data["choices"][0]
            text = choice["message"]["content"] if request.mode == "chat" else choice["text"]
            if not isinstance(text, str):
                text = "" if text is None else str(text)
            usage = data.get("usage") or {}
            return Completion(
                text=text,
                model=str(data.get("model") or request.model),
                finish_reason=choice.get("finish_reason"),
                tokens_in=usage.get("prompt_tokens"),
                tokens_out=usage.get("completion_tokens"),
            )
        except (KeyError, IndexError, TypeError, AttributeError):
            self._protocol_error(path, "the reply has no choices[0] with generated text")

    async def stream(self, request: CompletionRequest) -> AsyncIterator[Chunk]:
        path, body = self._completion_body(request, stream=True)
        parts: list[str] = []
        finish: str | None = None
        usage: dict[str, Any] = {}
        model = request.model
        ended = False
        try:
            async with self.client.stream(
                "POST", self._url(path), json=body, headers=self._headers(), timeout=self.timeout
            ) as response:
                if response.status_code >= 400:
                    await response.aread()
                    await self._raise_for_status(response, path, request.model)
                async for line in response.aiter_lines():
                    if not line.startswith("data:"):
                        continue
                    payload = line[5:].strip()
                    if payload == "[DONE]":
                        ended = True
                        break
                    event = self._parse_event(path, payload)
                    model = str(event.get("model") or model)
                    usage = event.get("usage") or usage
                    piece, reason = self._event_piece(request, event)
                    finish = reason or finish
                    if piece:
                        parts.append(piece)
                        yield Chunk(text=piece)
        except httpx.TransportError as exc:
            if isinstance(exc, httpx.TimeoutException):
                self._timeout_error(path)
            if isinstance(exc, httpx.ConnectError):
                self._unreachable_error(exc)
            self._cut_error(path, parts)
        except UNUSABLE_REQUEST as exc:
            self._unusable_error(exc)
        if not ended and finish is None:
            self._cut_error(path, parts)
        yield Chunk(
            text="",
            done=Completion(
                text="".join(parts),
                model=model,
                finish_reason=finish,
                tokens_in=usage.get("prompt_tokens"),
                tokens_out=usage.get("completion_tokens"),
            ),
        )

    async def embed(self, texts: list[str], model: str) -> Embeddings:
        path = "/embeddings"
        data = await self._post_json(path, {"model": model, "input": texts}, model=model)
        try:
            rows = sorted(data["data"], key=lambda row: row.get("index", 0))
            vectors = [[float(x) for x in row["embedding"]] for row in rows]
        except (KeyError, TypeError, ValueError, AttributeError):
            self._protocol_error(path, "the reply has no data[].embedding lists")
        if len(vectors) != len(texts):
            self._protocol_error(path, f"{len(texts)} texts were sent but {len(vectors)} came back")
        usage = data.get("usage") or {}
        return Embeddings(vectors=vectors, model=model, tokens_in=usage.get("prompt_tokens"))

    async def list_models(self) -> list[str]:
        path = "/models"
        response = await self._send("GET", path, None)
        await self._raise_for_status(response, path, None)
        data = self._json(response, path)
        try:
            return [str(row["id"]) for row in data["data"]]
        except (KeyError, TypeError):
            self._protocol_error(path, "the reply has no data[].id list")

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

    def _url(self, path: str) -> str:
        return self.base_url + path

    def _headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.api_key}"} if self.api_key else {}

    def _event_piece(self, request: CompletionRequest, event: dict[str, Any]) -> tuple[str, Any]:
        choices = event.get("choices") or []
        if not choices:
            return "", None
        choice = choices[0]
        if request.mode == "chat":
            piece = (choice.get("delta") or {}).get("content") or ""
        else:
            piece = choice.get("text") or ""
        return str(piece), choice.get("finish_reason")

    # -- transport and errors -----------------------------------------------------------

    async def _send(self, method: str, path: str, body: Any) -> httpx.Response:
        try:
            return await self.client.request(
                method, self._url(path), json=body, headers=self._headers(), timeout=self.timeout
            )
        except httpx.TimeoutException:
            self._timeout_error(path)
        except httpx.ConnectError as exc:
            self._unreachable_error(exc)
        except httpx.TransportError as exc:
            raise ProviderProtocolError(
                f"The connection to the endpoint at {self.base_url} broke during {path} "
                f"({type(exc).__name__}): try again; if it keeps happening, check the server's log."
            ) from None
        except UNUSABLE_REQUEST as exc:
            self._unusable_error(exc)

    def _unusable_error(self, exc: BaseException) -> NoReturn:
        raise ProviderError(
            f"A request to the endpoint at {self.base_url} could not be sent "
            f"({type(exc).__name__}: {exc}): check the endpoint URL and the API key in settings."
        ) from None

    async def _post_json(self, path: str, body: Any, *, model: str) -> dict[str, Any]:
        response = await self._send("POST", path, body)
        await self._raise_for_status(response, path, model)
        return self._json(response, path)

    def _json(self, response: httpx.Response, path: str) -> dict[str, Any]:
        try:
            data = response.json()
        except (json.JSONDecodeError, UnicodeDecodeError):
            self._protocol_error(path, "the reply is not valid JSON")
        if not isinstance(data, dict):
            self._protocol_error(path, "the reply is not a JSON object")
        return data

    def _parse_event(self, path: str, payload: str) -> dict[str, Any]:
        try:
            event = json.loads(payload)
        except json.JSONDecodeError:
            self._protocol_error(path, "a streamed event is not valid JSON")
        if not isinstance(event, dict):
            self._protocol_error(path, "a streamed event is not a JSON object")
        return event

    async def _raise_for_status(
        self, response: httpx.Response, path: str, model: str | None
    ) -> None:
        status = response.status_code
        if status < 400:
            return
        detail = _error_detail(response)
        where = f"The endpoint at {self.base_url}"
        if status in (401, 403):
            raise ProviderAuthError(
                f"{where} rejected the API key (HTTP {status}: {detail}). Check the API key in "
                "settings or TALEKEEPER_API_KEY."
            )
        if model and status in (400, 404) and _about_model(detail, model):
            offered = await self._offered_models()
            raise ProviderModelNotFound(
                f"{where} has no model named {model!r}. It offers: {offered}. "
                "Pick one of those in settings (or pull the model on the server first)."
            )
        if status == 404:
            raise ProviderError(
                f"{where} has no {path} (HTTP 404). Does the URL end in /v1 "
                "(e.g. http://127.0.0.1:11434/v1)?"
            )
        raise ProviderError(f"{where} answered HTTP {status} to {path}: {detail}")

    async def _offered_models(self) -> str:
        try:
            names = await self.list_models()
        except ProviderError:
            return "(the model list could not be read)"
        return ", ".join(names) if names else "(none)"

    def _protocol_error(self, path: str, what: str) -> NoReturn:
        raise ProviderProtocolError(
            f"The endpoint at {self.base_url} sent a malformed answer to {path}: {what}. "
            "Is this an OpenAI-compatible API (the base URL usually ends in /v1)?"
        )

    def _timeout_error(self, path: str) -> NoReturn:
        raise ProviderTimeout(
            f"The endpoint at {self.base_url} did not answer {path} within {self.timeout:g} s. "
            "The model may still be loading: try again, or raise the timeout in settings."
        )

    def _unreachable_error(self, exc: Exception) -> NoReturn:
        raise ProviderUnreachable(
            f"Could not connect to {self.base_url} ({type(exc).__name__}: the connection was "
            f"refused or the host is unknown). Is the server running at {self.base_url}?"
        )

    def _cut_error(self, path: str, parts: list[str]) -> NoReturn:
        raise ProviderProtocolError(
            f"The reply stream from {self.base_url}{path} was cut off after "
            f"{len(parts)} pieces, before it ended. Your action is saved: retry to generate again."
        )


def _error_detail(response: httpx.Response) -> str:
    """The endpoint's own error text, whatever shape its server gives it."""
    try:
        data = response.json()
    except (json.JSONDecodeError, UnicodeDecodeError):
        return response.text[:MAX_ERROR_DETAIL].strip() or response.reason_phrase
    if isinstance(data, dict):
        error = data.get("error", data.get("detail", data.get("message")))
        if isinstance(error, dict):
            error = error.get("message") or json.dumps(error)
        if error:
            return str(error)[:MAX_ERROR_DETAIL]
    return json.dumps(data)[:MAX_ERROR_DETAIL]


def _about_model(detail: str, model: str) -> bool:
    text = detail.lower()
    return model.lower() in text or "model_not_found" in text or "model not found" in text
