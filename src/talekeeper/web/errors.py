"""The one place errors become HTTP responses: ``{"error": {"code", "message"}}``.

Anything a client can send maps to a 4xx with a message that says what to fix.
A model endpoint that fails maps to 502/504 with the provider's message. An
unexpected exception is logged with its traceback and answered with a plain
500 that never shows the trace.
"""

from __future__ import annotations

import logging
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from talekeeper.core.errors import TalekeeperError

log = logging.getLogger(__name__)


def error_response(
    status: int, code: str, message: str, details: dict[str, Any] | None = None
) -> JSONResponse:
    body = {"code": code, "message": message, **(details or {})}
    return JSONResponse({"error": body}, status_code=status)


def describe_validation(errors: list[Any]) -> str:
    """Pydantic's errors as one sentence a person can act on."""
    parts = []
    for error in errors[:5]:
        where = ".".join(str(p) for p in error.get("loc", ()) if p != "body") or "body"
        if error.get("type") == "json_invalid":
            parts.append("the request body is not valid JSON")
            continue
        parts.append(f"{where}: {error.get('msg', 'invalid')}")
    return "; ".join(parts) + "."


def install(app: FastAPI) -> None:
    @app.exception_handler(TalekeeperError)
    async def _ours(_request: Request, exc: TalekeeperError) -> JSONResponse:
        return error_response(exc.status, exc.code, exc.message, exc.details)

    @app.exception_handler(RequestValidationError)
    async def _invalid(_request: Request, exc: RequestValidationError) -> JSONResponse:
        return error_response(400, "invalid_input", describe_validation(list(exc.errors())))

    @app.exception_handler(StarletteHTTPException)
    async def _http(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        if exc.status_code == 404:
            message = f"There is nothing at {request.url.path}."
        elif exc.status_code == 405:
            message = f"{request.method} is not allowed on {request.url.path}."
        else:
            message = str(exc.detail)
        return error_response(exc.status_code, "http_" + str(exc.status_code), message)

    @app.exception_handler(Exception)
    async def _unexpected(request: Request, exc: Exception) -> JSONResponse:
        log.exception("unexpected error on %s %s", request.method, request.url.path)
        return error_response(
            500, "internal_error", "Something went wrong on the server; the log has the details."
        )
