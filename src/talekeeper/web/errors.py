"""The one place errors become HTTP responses: ``{"error": {"code", "message"}}``.

Anything a client can send maps to a 4xx with a message that says what to fix.
A model endpoint that fails maps to 502/504 with the provider's message. An
unexpected exception is logged with its traceback and answered with a plain
500 that never shows the trace.

Request bodies are also checked here before a handler sees them
(``unicode_body``, a dependency of the whole app): JSON can spell text that
no UTF-8 store or response can hold (a lone surrogate, ``"\\ud800"``), and
such text is refused as a 400 instead of failing later in the database or the
response encoder.
"""

from __future__ import annotations

import logging
import re
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from sqlalchemy.exc import DBAPIError
from starlette.exceptions import HTTPException as StarletteHTTPException

from talekeeper.core.errors import InvalidInput, TalekeeperError
from talekeeper.services.common.units import busy_error

log = logging.getLogger(__name__)

NOT_JSON = "The request body must be JSON, sent with 'Content-Type: application/json'."
# FastAPI's detail when a body cannot be decoded at all (not UTF-8, nested too deep).
_UNPARSABLE = "There was an error parsing the body"
_SURROGATE = re.compile("[\ud800-\udfff]")


def error_response(
    status: int, code: str, message: str, details: dict[str, Any] | None = None
) -> JSONResponse:
    body = {"code": code, "message": message, **(details or {})}
    return JSONResponse({"error": body}, status_code=status)


def answer(exc: TalekeeperError, message: str | None = None, **details: Any) -> JSONResponse:
    """``exc`` as its error response (``message`` in place of its own when given), with
    ``Retry-After`` when it says how long to wait (the database stayed busy past our wait,
    or sign-in is throttled)."""
    response = error_response(exc.status, exc.code, message or exc.message, details)
    retry_after = getattr(exc, "retry_after", None)
    if isinstance(retry_after, int) and not isinstance(retry_after, bool):
        response.headers["Retry-After"] = str(max(retry_after, 1))
    return response


def _where(loc: tuple[Any, ...]) -> str:
    """A field's place as a person names it: ``persona.name``, ``limit (in the query)``."""
    source, rest = (loc[0], loc[1:]) if loc and loc[0] in ("body", "path", "query") else ("", loc)
    name = ".".join(str(p) for p in rest)
    if source in ("path", "query") and name:
        return f"{name} (in the {source})"
    return name or "body"


def describe_validation(errors: list[Any]) -> str:
    """Pydantic's errors as one sentence a person can act on."""
    parts = []
    for error in errors[:5]:
        loc = tuple(error.get("loc", ()))
        if error.get("type") == "json_invalid":
            reason = (error.get("ctx") or {}).get("error")
            at = loc[1] if len(loc) > 1 else None
            detail = f" ({reason} at character {at})" if reason and isinstance(at, int) else ""
            parts.append(f"the request body is not valid JSON{detail}")
            continue
        if loc == ("body",) and isinstance(error.get("input"), bytes | bytearray):
            # FastAPI passes the raw bytes on when the Content-Type is not JSON.
            parts.append(
                "the request body must be JSON, sent with 'Content-Type: application/json'"
            )
            continue
        if loc == ("body",) and error.get("type") == "missing":
            parts.append("the request body is missing: send a JSON object")
            continue
        parts.append(f"{_where(loc)}: {error.get('msg', 'invalid')}")
    return "; ".join(parts) + "."


def _surrogate_at(data: Any) -> str | None:
    """Where in a parsed JSON body a string holds a lone surrogate (``""`` for the body
    itself, else a path such as ``persona.name``), or ``None``.

    Iterative: a body may nest as deep as the JSON parser allows, deeper than recursion.
    """
    stack: list[tuple[str, Any]] = [("", data)]
    while stack:
        where, value = stack.pop()
        if isinstance(value, str):
            if _SURROGATE.search(value):
                return where
        elif isinstance(value, dict):
            for key, item in value.items():
                if _SURROGATE.search(key):
                    return where  # the name itself cannot be echoed
                stack.append((f"{where}.{key}" if where else key, item))
        elif isinstance(value, list):
            stack.extend((f"{where}[{i}]", item) for i, item in enumerate(value))
    return None


def is_json(content_type: str | None) -> bool:
    """Whether a Content-Type names JSON (``application/json``, ``application/*+json``),
    as FastAPI decides whether to parse a body."""
    media = (content_type or "").partition(";")[0].strip().lower()
    kind, _, subtype = media.partition("/")
    return kind == "application" and (subtype == "json" or subtype.endswith("+json"))


async def unicode_body(request: Request) -> None:
    """An app-wide dependency: refuse a JSON body whose text is not valid Unicode.

    Only a body sent as JSON is read (the guard has already bounded its size); any
    other is left unread, so a large text body on a route that takes none costs nothing.

    ``json`` accepts the escape ``"\\ud800"`` but no UTF-8 text holds it, so it would
    fail after the handler ran: in the database driver, in the response encoder, or,
    for a saved API key, in every later model call.
    """
    if not is_json(request.headers.get("content-type")) or not await request.body():
        return  # only a JSON body is read here: any other is refused or ignored by its route
    try:
        data = await request.json()  # cached: the route's own body parsing reads the same
    except (ValueError, RecursionError):
        return  # not JSON: the route refuses it itself, or it takes no body
    where = _surrogate_at(data)
    if where is not None:
        subject = f"'{where}' in the request body" if where else "The request body"
        raise InvalidInput(
            f"{subject} is not valid Unicode: it holds a lone surrogate such as \\ud800. "
            "Send UTF-8 text."
        )


def install(app: FastAPI) -> None:
    @app.exception_handler(TalekeeperError)
    async def _ours(_request: Request, exc: TalekeeperError) -> JSONResponse:
        return answer(exc)

    @app.exception_handler(DBAPIError)
    async def _database(request: Request, exc: DBAPIError) -> JSONResponse:
        busy = busy_error(exc)
        if busy is not None:  # a lock held past our wait: "try again", never a server error
            return answer(busy)
        return await _unexpected(request, exc)

    @app.exception_handler(RequestValidationError)
    async def _invalid(_request: Request, exc: RequestValidationError) -> JSONResponse:
        return error_response(400, "invalid_input", describe_validation(list(exc.errors())))

    @app.exception_handler(StarletteHTTPException)
    async def _http(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        if exc.status_code == 404:
            message = f"There is nothing at {request.url.path}."
        elif exc.status_code == 405:
            message = f"{request.method} is not allowed on {request.url.path}."
        elif exc.status_code == 400 and exc.detail == _UNPARSABLE:
            message = "The request body could not be read: send a JSON object in UTF-8."
        else:
            message = str(exc.detail)
        return error_response(exc.status_code, "http_" + str(exc.status_code), message)

    @app.exception_handler(Exception)
    async def _unexpected(request: Request, exc: Exception) -> JSONResponse:
        log.exception("unexpected error on %s %s", request.method, request.url.path)
        return error_response(
            500, "internal_error", "Something went wrong on the server; the log has the details."
        )
