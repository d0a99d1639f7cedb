"""The FastAPI application. ``create_app(settings)`` builds everything; importing builds nothing.

The runtime (engine, migrations, providers) is built in the lifespan, so a
test can create many apps against many databases in one process.

Invariants: the guard (``web/guard.py``: Host allow-list, cross-origin check, body
limits, security headers) is the outermost layer, outside even the server-error handler,
so no request reaches a route, a static file or an error page without it and every
answer carries its headers. Inside it, the auth layer (``web/auth.py``) decides who the
request acts as (accounts mode), before any route or page. A body is parsed as JSON only
when its Content-Type says JSON (``strict_content_type``, stated here rather than left
to FastAPI's default, which older versions did not have). There are no ``/docs`` or
``/redoc`` pages: they run Swagger UI or ReDoc from a CDN inside the app's own origin,
where a script has every power of the player; shipping those bundles in the package
instead is more third-party code to keep current than the pages are worth, and
``/openapi.json`` stays for scripts and API tools."""

from __future__ import annotations

import functools
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
from fastapi import APIRouter, Depends, FastAPI
from fastapi.staticfiles import StaticFiles
from starlette.types import ASGIApp

from talekeeper import __version__
from talekeeper.bootstrap import Runtime
from talekeeper.services.accounts import LoginThrottle
from talekeeper.settings import Settings, load_settings
from talekeeper.web import errors
from talekeeper.web.auth import Auth, accounts_mode
from talekeeper.web.guard import Guard
from talekeeper.web.routes import (
    admin,
    adventures,
    ai_calls,
    auth,
    exchange,
    health,
    library,
    lore,
    memory,
    pages,
    proposals,
    setup,
    sharing,
    story,
    user_settings,
    world,
)
from talekeeper.web.streaming import TurnStreams


@functools.cache
def _routes() -> tuple[Any, ...]:
    """Every route of the app, built once a process and shared by every app it makes.

    Building them is FastAPI reading each endpoint's signature and making its validators
    (~45 ms); a route holds nothing of one app (no endpoint here uses dependency
    overrides), and a process that makes many apps (the tests make one each) paid that
    every time. Every JSON body is checked for text no UTF-8 store can hold, whatever the
    route (``unicode_body``, a dependency of every route)."""
    every = APIRouter(dependencies=[Depends(errors.unicode_body)])
    for module in (
        health,
        auth,
        admin,
        setup,
        user_settings,
        ai_calls,
        adventures,
        proposals,
        sharing,
        exchange,
        lore,
        library,
        story,
        memory,
        world,
        pages,
    ):
        every.include_router(module.router)
    return tuple(every.routes)


class GuardedApp(FastAPI):
    """FastAPI with the guard wrapped around its whole middleware stack (see above)."""

    def __init__(self, *, allowed_hosts: tuple[str, ...], **options: Any) -> None:
        self.allowed_hosts = allowed_hosts
        super().__init__(**options)

    def build_middleware_stack(self) -> ASGIApp:
        return Guard(Auth(super().build_middleware_stack()), self.allowed_hosts)


def create_app(settings: Settings | None = None, *, queue_worker: bool = True) -> FastAPI:
    """The app. ``queue_worker``: where the database's job queue is shared (PostgreSQL),
    this process also runs the background passes (``talekeeper serve`` leaves them to
    ``talekeeper worker``); on SQLite the app's own worker runs them either way."""
    resolved = settings if settings is not None else load_settings()

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        runtime = Runtime.build(resolved)
        app.state.runtime = runtime
        # Local mode plays as the local user; accounts mode as whoever signed in (web/auth.py).
        app.state.local_user_id = None if accounts_mode(runtime) else runtime.local_user_id()
        # Sign-in failures per account and address, and password checks at once (routes/auth).
        app.state.sign_in = auth.Gate(LoginThrottle(), anyio.CapacityLimiter(auth.CHECKS_AT_ONCE))
        setup.prepare(app, runtime)  # accounts mode, no account yet: the one-time setup link
        await runtime.start(queue_worker=queue_worker)
        try:
            yield
        finally:
            await app.state.streams.aclose()  # turns whose client left finish and save first
            await runtime.aclose()

    app = GuardedApp(
        allowed_hosts=resolved.extra_host_names,
        title="Talekeeper",
        version=__version__,
        lifespan=lifespan,
        strict_content_type=True,
        docs_url=None,
        redoc_url=None,
    )
    errors.install(app)
    app.state.streams = TurnStreams()  # streamed turns, detached from their connections
    app.router.routes.extend(_routes())
    # The pages' scripts and styles ship inside the package: nothing to build.
    static = Path(__file__).parent / "static"
    app.mount("/static", StaticFiles(directory=static), name="static")
    return app
