"""The FastAPI application. ``create_app(settings)`` builds everything; importing builds nothing.

The runtime (engine, migrations, providers) is built in the lifespan, so a
test can create many apps against many databases in one process.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from fastapi import Depends, FastAPI
from fastapi.staticfiles import StaticFiles

from talekeeper import __version__
from talekeeper.bootstrap import Runtime
from talekeeper.settings import Settings, load_settings
from talekeeper.web import errors
from talekeeper.web.routes import adventures, ai_calls, health, memory, pages, story, user_settings


def create_app(settings: Settings | None = None) -> FastAPI:
    resolved = settings if settings is not None else load_settings()

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        runtime = Runtime.build(resolved)
        app.state.runtime = runtime
        app.state.local_user_id = runtime.local_user_id()
        await runtime.start()
        try:
            yield
        finally:
            await runtime.aclose()

    # Every JSON body is checked for text no UTF-8 store can hold, whatever the route.
    app = FastAPI(
        title="Talekeeper",
        version=__version__,
        lifespan=lifespan,
        dependencies=[Depends(errors.unicode_body)],
    )
    errors.install(app)
    for module in (health, user_settings, ai_calls, adventures, story, memory, pages):
        app.include_router(module.router)
    # The pages' scripts and styles ship inside the package: nothing to build.
    static = Path(__file__).parent / "static"
    app.mount("/static", StaticFiles(directory=static), name="static")
    return app
