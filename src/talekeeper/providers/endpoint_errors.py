"""The sentences an OpenAI-compatible endpoint's failures become.

Invariants:

- Every message names the endpoint by its URL without credentials and says
  what to try next; each function returns the ``ProviderError`` subclass to
  raise, so the caller's ``raise`` shows where a call ends.
- The endpoint's own words (an error body) are repeated only when ``echo`` is
  set (the saved endpoint), on one line and at most ``MAX_ERROR_DETAIL``
  characters; otherwise a status is told by its number, its standard reason
  phrase and what it means. A redirect's target is shown without credentials,
  query or fragment.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any
from urllib.parse import urljoin, urlsplit

import httpx

from talekeeper.core.errors import (
    ProviderAuthError,
    ProviderError,
    ProviderProtocolError,
    ProviderTimeout,
    ProviderUnreachable,
)
from talekeeper.providers.base import without_userinfo

MAX_ERROR_DETAIL = 300  # characters of an endpoint's own error text we repeat to the player
MAX_SHOWN_URL = 200  # characters of a redirect's target we show

# Requests that cannot even be sent: a malformed URL, a port out of range, a key that no
# header can carry. Settings refuse these, but an endpoint's answer must never be a crash.
UNUSABLE_REQUEST = (httpx.InvalidURL, httpx.UnsupportedProtocol, ValueError, UnicodeError)


@dataclass(frozen=True)
class Failures:
    """The failures of one endpoint: ``url`` without credentials, ``echo`` whether its own
    error text may be repeated."""

    url: str
    timeout: float
    echo: bool

    def protocol(self, path: str, what: str) -> ProviderProtocolError:
        return ProviderProtocolError(
            f"The endpoint at {self.url} sent a malformed answer to {path}: {what}. "
            "Is this an OpenAI-compatible API (the base URL usually ends in /v1)?"
        )

    def timed_out(self, path: str) -> ProviderTimeout:
        return ProviderTimeout(
            f"The endpoint at {self.url} did not answer {path} within {self.timeout:g} s. "
            "The model may still be loading: try again, or raise the timeout in settings."
        )

    def unreachable(self, exc: BaseException) -> ProviderUnreachable:
        return ProviderUnreachable(
            f"Could not connect to {self.url} ({type(exc).__name__}: the connection was "
            f"refused or the host is unknown). Is the server running at {self.url}?"
        )

    def unusable(self, exc: BaseException) -> ProviderError:
        return ProviderError(
            f"A request to the endpoint at {self.url} could not be sent "
            f"({type(exc).__name__}: {exc}): check the endpoint URL and the API key in settings."
        )

    def cut(self, path: str, pieces: int) -> ProviderProtocolError:
        return ProviderProtocolError(
            f"The reply stream from {self.url}{path} was cut off after {pieces} pieces, "
            "before it ended. Your action is saved: retry to generate again."
        )

    def exchange(self, exc: BaseException, path: str, pieces: int | None) -> ProviderError:
        """What sending or reading raised, as the sentence it means (``pieces``: how many
        pieces of a stream came before it broke, ``None`` before any answer)."""
        if isinstance(exc, httpx.TimeoutException):
            return self.timed_out(path)
        if isinstance(exc, httpx.ConnectError):
            return self.unreachable(exc)
        if isinstance(exc, UNUSABLE_REQUEST):
            return self.unusable(exc)
        if isinstance(exc, httpx.DecodingError):
            return self.protocol(
                path, "its body could not be decoded (a broken Content-Encoding such as gzip)"
            )
        if pieces is not None and isinstance(exc, httpx.TransportError):
            return self.cut(path, pieces)
        return ProviderProtocolError(
            f"The connection to the endpoint at {self.url} broke during {path} "
            f"({type(exc).__name__}: it closed early, or what came back was not HTTP): try "
            "again; if it keeps happening, check that the URL points at the model server."
        )

    def redirect(self, path: str, status: int, location: str) -> ProviderError:
        where = f"The endpoint at {self.url} answered {path} with a redirect (HTTP {status})"
        target = shown_url(urljoin(self.url + path, location)) if location else ""
        if not target:
            return ProviderError(
                f"{where} that points nowhere. Talekeeper does not follow redirects: put the "
                "model server's own URL in settings."
            )
        base = target.removesuffix(path) if target.endswith(path) else target
        if base == self.url:
            next_step = "it points back at itself, so the server is misconfigured: check it"
        else:
            next_step = f"put the final URL (probably {base}) in settings"
        return ProviderError(
            f"{where} to {target}. Talekeeper does not follow redirects: {next_step}."
        )

    def refused(self, path: str, status: int, content: bytes) -> ProviderError:
        """An error status (4xx or 5xx) other than an unknown model."""
        detail = error_detail(content)
        said = f" It said: {detail}" if self.echo and detail else ""
        where = f"The endpoint at {self.url}"
        if status in (401, 403):
            return ProviderAuthError(
                f"{where} rejected the API key (HTTP {status}). Check the API key in settings "
                f"or TALEKEEPER_API_KEY.{said}"
            )
        if status == 404:
            return ProviderError(
                f"{where} has no {path} (HTTP 404). Does the URL end in /v1 "
                "(e.g. http://127.0.0.1:11434/v1)?"
            )
        return ProviderError(
            f"{where} answered {path} with HTTP {status} "
            f"{httpx.codes.get_reason_phrase(status)}: {meaning(status)}.{said}"
        )


def meaning(status: int) -> str:
    """What a refusal means and what to do, in words the endpoint did not choose."""
    if status >= 500:
        return "a server error; check the server's log, then try again"
    if status == 429:
        return "it is limiting requests; wait a moment and try again"
    if status == 413:
        return "the request was too large for it; lower the context length in settings"
    if status in (405, 501):
        return "it does not take this request there; is the URL an OpenAI-compatible API?"
    if status == 400:
        return "it refused the request; check the model name and the API mode in settings"
    return "it refused the request; check the endpoint URL and the API key in settings"


def shown_url(url: str) -> str:
    """A URL an endpoint named, as we may repeat it: no credentials, query or fragment."""
    try:
        parts = urlsplit(without_userinfo(url))
    except ValueError:
        return ""
    shown = f"{parts.scheme}://{parts.netloc}{parts.path}"
    shown = "".join(c for c in shown if c.isprintable() and not c.isspace())
    return shown if len(shown) <= MAX_SHOWN_URL else shown[: MAX_SHOWN_URL - 3] + "..."


def dump(value: Any) -> str:
    """``value`` as JSON text, or "" when it cannot be (nested past any depth)."""
    try:
        return json.dumps(value)
    except (ValueError, TypeError, RecursionError):
        return ""


def error_detail(content: bytes) -> str:
    """The endpoint's own error text, whatever shape its server gives it, on one line."""
    try:
        data = json.loads(content)
    except (ValueError, RecursionError):
        text = content[: MAX_ERROR_DETAIL * 4].decode("utf-8", errors="replace")
        return " ".join(text.split())[:MAX_ERROR_DETAIL]
    if isinstance(data, dict):
        error = data.get("error", data.get("detail", data.get("message")))
        if isinstance(error, dict):
            error = error.get("message") or dump(error)
        if error:
            text = error if isinstance(error, str) else dump(error)
            return " ".join(text.split())[:MAX_ERROR_DETAIL]
    return dump(data)[:MAX_ERROR_DETAIL]


def about_model(content: bytes, model: str) -> bool:
    """Whether an error body speaks of the model (an unknown model's 400 or 404)."""
    text = error_detail(content).lower()
    return model.lower() in text or "model_not_found" in text or "model not found" in text
