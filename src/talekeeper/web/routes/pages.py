"""Server-rendered pages: the shells of the adventures, play, settings and debug pages.

Why this shape: each page is a Jinja2 template (the chrome, the names of the
models in use, the adventure's title) plus one small ES module from
``/static/js`` that renders the changing parts from the JSON API. The JSON API
is the fixed interface, so the browser is just its first client: one renderer
per view, nothing for a user to build, and a turn streams over the same
server-sent events a script gets.

Invariants: every value in a template is escaped by autoescape; every page is
sent with a Content-Security-Policy that runs scripts from this server's
``/static`` only (no inline script, no ``eval``), so text that slips into the
page as markup still cannot run. An unknown adventure is a readable 404 page,
not JSON.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fastapi import APIRouter, Depends
from fastapi.responses import HTMLResponse
from jinja2 import Environment, FileSystemLoader, StrictUndefined, select_autoescape
from sqlalchemy.orm import Session

from talekeeper import __version__
from talekeeper.bootstrap import Runtime
from talekeeper.core.errors import NotFound
from talekeeper.services.tree import load_adventure
from talekeeper.web.deps import DB, RowId, runtime, user_id

router = APIRouter(include_in_schema=False)

TEMPLATES = Environment(
    loader=FileSystemLoader(Path(__file__).parent.parent / "templates"),
    autoescape=select_autoescape(["html"]),
    undefined=StrictUndefined,
)

POLICY = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; "
    "frame-ancestors 'none'"
)
# A page's own headers; the guard (web/guard.py) adds nosniff, X-Frame-Options and
# Referrer-Policy to every response, this one included.
HEADERS = {
    "Content-Security-Policy": POLICY,
    "Cache-Control": "no-store",
}


def render(rt: Runtime, uid: int, name: str, status: int = 200, **context: Any) -> HTMLResponse:
    models = rt.models_for(rt.settings_for(uid), uid)
    html = TEMPLATES.get_template(name).render(
        version=__version__,
        models=models.names(),
        notes=models.narrator.provider.info.notes,
        nav=context.pop("nav", ""),
        **context,
    )
    return HTMLResponse(html, status_code=status, headers=HEADERS)


@router.get("/", response_class=HTMLResponse)
def adventures_page(rt: Runtime = Depends(runtime), uid: int = Depends(user_id)) -> HTMLResponse:
    return render(rt, uid, "adventures.html", nav="adventures")


@router.get("/adventures/{adventure_id}", response_class=HTMLResponse)
def play_page(
    adventure_id: RowId,
    session: Session = DB,
    rt: Runtime = Depends(runtime),
    uid: int = Depends(user_id),
) -> HTMLResponse:
    try:
        adventure = load_adventure(session, adventure_id, uid)
    except NotFound as missing:
        return render(
            rt, uid, "message.html", 404, heading="No such adventure", message=str(missing)
        )
    return render(
        rt, uid, "play.html", adventure_id=adventure.id, title=adventure.title, nav="adventures"
    )


@router.get("/settings", response_class=HTMLResponse)
def settings_page(rt: Runtime = Depends(runtime), uid: int = Depends(user_id)) -> HTMLResponse:
    return render(rt, uid, "settings.html", nav="settings")


@router.get("/debug", response_class=HTMLResponse)
def debug_page(rt: Runtime = Depends(runtime), uid: int = Depends(user_id)) -> HTMLResponse:
    return render(rt, uid, "debug.html", nav="debug")
