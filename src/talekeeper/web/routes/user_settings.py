"""Per-user settings and the connection test.

The API key is write-only: responses carry ``api_key_set`` (true/false), never
the key. A PATCH is validated as a whole (every value, then the combination)
before anything is saved.
"""

from __future__ import annotations

import asyncio
from typing import Any

from fastapi import APIRouter, Body, Depends
from sqlalchemy.orm import Session

from talekeeper.bootstrap import Runtime
from talekeeper.core.errors import InvalidInput
from talekeeper.services import diagnostics
from talekeeper.settings import REGISTRY, per_user_setting
from talekeeper.storage.repositories.users import UserRepository
from talekeeper.web.deps import db, runtime, user_id
from talekeeper.web.errors import NOT_JSON

router = APIRouter(prefix="/api/settings", tags=["settings"])


def _overrides(body: Any) -> dict[str, Any]:
    if body is None:
        return {}
    if isinstance(body, bytes):  # FastAPI hands over raw bytes when the Content-Type is not JSON
        raise InvalidInput(NOT_JSON)
    if not isinstance(body, dict):
        raise InvalidInput('Send a JSON object of settings, e.g. {"model": "llama3.2"}.')
    return body


@router.get("")
def read_settings(
    session: Session = Depends(db), uid: int = Depends(user_id), rt: Runtime = Depends(runtime)
) -> dict[str, Any]:
    return {
        "values": rt.user_settings(session, uid).public(),
        "settings": [
            {
                "key": s.key,
                "env": s.env,
                "type": s.kind.__name__,
                "help": s.help,
                "accepts": s.accepts(),
                "choices": list(s.choices),
                "secret": s.secret,
            }
            for s in REGISTRY
            if s.per_user
        ],
    }


@router.patch("")
def update_settings(
    body: Any = Body(...),
    session: Session = Depends(db),
    uid: int = Depends(user_id),
    rt: Runtime = Depends(runtime),
) -> dict[str, Any]:
    """Set per-user values; ``null`` removes an override (back to the server's default)."""
    changes = _overrides(body)
    repo = UserRepository(session)
    stored = repo.settings(uid)
    kept = {k: v for k, v in changes.items() if v is not None}
    cleared = [k for k, v in changes.items() if v is None]
    for key in cleared:
        per_user_setting(key)  # refuses a key that is not a per-user setting
        stored.pop(key, None)
    merged = rt.settings.with_overrides({**stored, **kept})  # validates values and combination
    parsed = {key: getattr(merged, key) for key in kept}
    repo.save_settings(uid, {**parsed, **dict.fromkeys(cleared)})
    return {"values": merged.public()}


@router.post("/test-connection")
async def test_connection(
    body: Any = Body(None), uid: int = Depends(user_id), rt: Runtime = Depends(runtime)
) -> dict[str, Any]:
    """A short real generation and an embedding with the saved settings, or with unsaved
    values given in the body (so the settings page can test before saving)."""
    base = await asyncio.to_thread(rt.settings_for, uid)
    settings = base.with_overrides(_overrides(body))
    return await diagnostics.test_connection(rt.models_for(settings, uid))
