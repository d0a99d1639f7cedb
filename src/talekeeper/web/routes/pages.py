"""Server-rendered pages. Every value is escaped by Jinja2's autoescape."""

from __future__ import annotations

import asyncio
from pathlib import Path

from fastapi import APIRouter, Depends
from fastapi.responses import HTMLResponse
from jinja2 import Environment, FileSystemLoader, StrictUndefined, select_autoescape

from talekeeper import __version__
from talekeeper.bootstrap import Runtime
from talekeeper.web.deps import runtime, user_id

router = APIRouter(include_in_schema=False)

TEMPLATES = Environment(
    loader=FileSystemLoader(Path(__file__).parent.parent / "templates"),
    autoescape=select_autoescape(["html"]),
    undefined=StrictUndefined,
)


@router.get("/", response_class=HTMLResponse)
async def home(rt: Runtime = Depends(runtime), uid: int = Depends(user_id)) -> HTMLResponse:
    settings = await asyncio.to_thread(rt.settings_for, uid)
    models = rt.models_for(settings, uid)
    html = TEMPLATES.get_template("home.html").render(
        version=__version__, models=models.names(), notes=models.narrator.provider.info.notes
    )
    return HTMLResponse(html)
