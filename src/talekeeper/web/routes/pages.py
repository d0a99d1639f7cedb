"""Server-rendered pages: the shells of the adventures, play, library, settings and debug pages.

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

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fastapi import APIRouter, Depends, Query, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from jinja2 import Environment, FileSystemLoader, StrictUndefined, select_autoescape
from sqlalchemy.orm import Session

from talekeeper import __version__
from talekeeper.bootstrap import Runtime
from talekeeper.core.errors import NotFound
from talekeeper.services.common.vocabulary import MemberRole
from talekeeper.services.story import sharing
from talekeeper.services.story.access import load_adventure
from talekeeper.services.story.sharing import LOCAL_MODE
from talekeeper.web.auth import accounts_mode
from talekeeper.web.deps import DB, RowId, principal, runtime, user_id
from talekeeper.web.guard import LIBRARY_FILE_MAX

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


@dataclass(frozen=True)
class Viewer:
    """The signed-in account the page chrome names: its name, and whether it is an
    administrator (the Admin link)."""

    name: str
    admin: bool


def viewer(request: Request) -> Viewer | None:
    """The signed-in account the page chrome names (accounts mode), or None."""
    found = principal(request)
    return None if found is None else Viewer(found.user.name, found.user.is_admin)


def render(
    rt: Runtime, uid: int | None, name: str, status: int = 200, **context: Any
) -> HTMLResponse:
    settings = rt.settings if uid is None else rt.settings_for(uid)
    models = rt.models_for(settings, uid)
    html = TEMPLATES.get_template(name).render(
        version=__version__,
        models=models.names(),
        notes=models.narrator.provider.info.notes,
        placeholder=models.narrator.provider.info.placeholder,
        # Whether the player may switch endpoints (so a list of local servers is any use).
        may_switch=not rt.endpoints_fixed(),
        nav=context.pop("nav", ""),
        account=context.pop("account", None),
        **context,
    )
    return HTMLResponse(html, status_code=status, headers=HEADERS)


@router.get("/", response_class=HTMLResponse)
def adventures_page(
    rt: Runtime = Depends(runtime),
    uid: int = Depends(user_id),
    account: Viewer | None = Depends(viewer),
) -> HTMLResponse:
    return render(rt, uid, "adventures.html", nav="adventures", account=account)


@router.get("/adventures/{adventure_id}", response_class=HTMLResponse)
def play_page(
    adventure_id: RowId,
    session: Session = DB,
    rt: Runtime = Depends(runtime),
    uid: int = Depends(user_id),
    account: Viewer | None = Depends(viewer),
) -> HTMLResponse:
    try:
        adventure = load_adventure(session, adventure_id, uid, MemberRole.VIEWER)
    except NotFound as missing:
        return render(
            rt,
            uid,
            "message.html",
            404,
            heading="No such adventure",
            message=str(missing),
            account=account,
        )
    role = sharing.role_in(session, adventure, uid)
    return render(
        rt,
        uid,
        "play.html",
        adventure_id=adventure.id,
        title=adventure.title,
        nav="adventures",
        account=account,
        role=role.value,
        # Follow the feed where there is one to follow: a member's page, or the host's
        # while others belong (docs/sharing.md); the host's page starts following when
        # it makes an invite.
        feed=role is not MemberRole.HOST or sharing.is_shared(session, adventure.id),
        sharing=role is MemberRole.HOST and account is not None,  # the People panel
        user_id=uid,  # the page leaves its reader out of "who is writing"
    )


@router.get("/library", response_class=HTMLResponse)
def library_page(
    rt: Runtime = Depends(runtime),
    uid: int = Depends(user_id),
    account: Viewer | None = Depends(viewer),
) -> HTMLResponse:
    # The page states the guard's own limit, so what it says is what an upload meets.
    return render(
        rt,
        uid,
        "library.html",
        nav="library",
        account=account,
        file_max=LIBRARY_FILE_MAX,
        file_max_mb=round(LIBRARY_FILE_MAX / (1024 * 1024)),
    )


@router.get("/settings", response_class=HTMLResponse)
def settings_page(
    rt: Runtime = Depends(runtime),
    uid: int = Depends(user_id),
    account: Viewer | None = Depends(viewer),
) -> HTMLResponse:
    return render(rt, uid, "settings.html", nav="settings", account=account)


@router.get("/debug", response_class=HTMLResponse)
def debug_page(
    rt: Runtime = Depends(runtime),
    uid: int = Depends(user_id),
    account: Viewer | None = Depends(viewer),
) -> HTMLResponse:
    return render(rt, uid, "debug.html", nav="debug", account=account)


def safe_next(target: str) -> str:
    """Where the sign-in page goes afterwards: a path of this site, never another site
    (``//host`` and ``/\\host`` are other sites to a browser)."""
    if not target.startswith("/") or target.startswith(("//", "/\\")) or len(target) > 2000:
        return "/"
    if any(ch in target for ch in "\r\n\t"):
        return "/"
    return target


@router.get("/join", response_class=HTMLResponse)
def join_page(
    rt: Runtime = Depends(runtime),
    uid: int = Depends(user_id),
    account: Viewer | None = Depends(viewer),
) -> HTMLResponse:
    """An invite link's page (``/join#CODE``: docs/sharing.md)."""
    if account is None:
        return _local_mode(rt, uid, "No sharing here", LOCAL_MODE)
    return render(rt, uid, "join.html", nav="adventures", account=account)


def _local_mode(rt: Runtime, uid: int, heading: str, message: str) -> HTMLResponse:
    """A page of accounts mode, asked for in local mode: not here, and why."""
    return render(rt, uid, "message.html", 404, heading=heading, message=message, account=None)


@router.get("/login", response_class=HTMLResponse)
def login_page(rt: Runtime = Depends(runtime), next: str = Query("/", max_length=2000)) -> Response:
    if not accounts_mode(rt):
        return RedirectResponse("/", status_code=303)
    return render(rt, None, "login.html", next=safe_next(next), nav="login")


@router.get("/account", response_class=HTMLResponse)
def account_page(
    rt: Runtime = Depends(runtime),
    uid: int = Depends(user_id),
    account: Viewer | None = Depends(viewer),
) -> HTMLResponse:
    if account is None:
        return _local_mode(
            rt,
            uid,
            "No accounts here",
            "This Talekeeper runs in local mode: there is no account to manage.",
        )
    return render(rt, uid, "account.html", nav="account", account=account)
