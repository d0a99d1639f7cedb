"""Per-user settings, the endpoint's model list and the connection test.

Invariants:

- The API key is write-only: responses carry ``api_key_set`` (true/false), never
  the key, and a secret's server default is never described either.
- A PATCH is validated as a whole (every value, then the combination) before
  anything is saved; ``null`` removes an override (back to the server default).
- The model list and the connection test may use unsaved values from the body
  (the settings page asks before it saves), with ``null`` meaning the server
  default as in a PATCH; each value is checked like a save would check it, and
  nothing is stored. A model server that fails is a
  readable ``error`` in a 200 answer, never a 5xx: it is the thing being tested.
"""

from __future__ import annotations

import asyncio
from typing import Any

from fastapi import APIRouter, Body, Depends
from sqlalchemy.orm import Session

from talekeeper.bootstrap import Runtime
from talekeeper.core.errors import InvalidInput
from talekeeper.services import diagnostics
from talekeeper.settings import (
    EMBEDDED,
    EXTRACTIVE,
    NO_EMBEDDINGS,
    REGISTRY,
    Setting,
    Settings,
    per_user_setting,
)
from talekeeper.storage.repositories.users import UserRepository
from talekeeper.web.deps import DB, runtime, user_id
from talekeeper.web.errors import NOT_JSON

router = APIRouter(prefix="/api/settings", tags=["settings"])

# The settings that name a model, with the values that are not a model at the endpoint
# (value, what it means): a client offers these beside the endpoint's own list.
MODEL_SETTINGS: dict[str, tuple[tuple[str, str], ...]] = {
    "model": ((EMBEDDED, "the in-process model"),),
    "summary_model": (
        ("", "the narrator's model (or 'extractive' when that is 'embedded')"),
        (EMBEDDED, "the in-process model"),
        (EXTRACTIVE, "no model: sentences picked from the story"),
    ),
    "embedding_model": (
        (EMBEDDED, "the in-process embedder"),
        (NO_EMBEDDINGS, "no embeddings: the Memory Bank is off"),
    ),
}
# What reaching the endpoint depends on; the model list needs nothing else.
ENDPOINT_KEYS = ("endpoint_url", "api_key", "timeout")


def _overrides(body: Any) -> dict[str, Any]:
    if body is None:
        return {}
    if isinstance(body, bytes):  # FastAPI hands over raw bytes when the Content-Type is not JSON
        raise InvalidInput(NOT_JSON)
    if not isinstance(body, dict):
        raise InvalidInput('Send a JSON object of settings, e.g. {"model": "llama3.2"}.')
    return body


def _unsaved(body: Any, defaults: Settings) -> dict[str, Any]:
    """A body of unsaved values, ``null`` standing for the server default (as in a PATCH)."""
    values = dict(_overrides(body))
    for key, raw in values.items():
        setting = per_user_setting(key)  # refuses a key that is not a per-user setting
        if raw is None:
            values[key] = getattr(defaults, key)
        else:
            setting.parse(raw)  # each value checked as a save would check it
    return values


def _describe(setting: Setting, defaults: Settings) -> dict[str, Any]:
    special = MODEL_SETTINGS.get(setting.key)
    return {
        "key": setting.key,
        "env": setting.env,
        "type": setting.kind.__name__,
        "help": setting.help,
        "accepts": setting.accepts(),
        "choices": list(setting.choices),
        "secret": setting.secret,
        "minimum": setting.minimum,
        "maximum": setting.maximum,
        # The server's value, which a reset goes back to; a secret's stays unsaid.
        "default": None if setting.secret else getattr(defaults, setting.key),
        "names_model": special is not None,
        "special": [{"value": v, "means": m} for v, m in special or ()],
    }


@router.get("")
def read_settings(
    session: Session = DB,
    uid: int = Depends(user_id),
    rt: Runtime = Depends(runtime),
) -> dict[str, Any]:
    stored = UserRepository(session).settings(uid)
    return {
        "values": rt.user_settings(session, uid).public(),
        "overridden": sorted(stored),
        "settings": [_describe(s, rt.settings) for s in REGISTRY if s.per_user],
    }


@router.patch("")
def update_settings(
    body: Any = Body(...),
    session: Session = DB,
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
    return {"values": merged.public(), "overridden": sorted(set(stored) | set(kept))}


@router.get("/models")
async def endpoint_models(uid: int = Depends(user_id), rt: Runtime = Depends(runtime)) -> Any:
    """The model names the saved endpoint offers: ``{"models", "error", "endpoint", ...}``."""
    settings = await asyncio.to_thread(rt.settings_for, uid)
    return await _models(rt, settings)


@router.post("/models")
async def endpoint_models_unsaved(
    body: Any = Body(None), uid: int = Depends(user_id), rt: Runtime = Depends(runtime)
) -> Any:
    """The same, for unsaved values in the body (the endpoint URL, the key, the timeout)."""
    changes = _unsaved(body, rt.settings)
    endpoint = {k: changes[k] for k in ENDPOINT_KEYS if k in changes}
    base = await asyncio.to_thread(rt.settings_for, uid)
    # The list is the endpoint's whatever the form's model fields say, so the rule that a
    # named model needs an endpoint is left to the save: the probe names none.
    probe = base.with_overrides(
        {**endpoint, "model": EMBEDDED, "summary_model": "", "embedding_model": EMBEDDED}
    )
    return await _models(rt, probe)


async def _models(rt: Runtime, settings: Settings) -> dict[str, Any]:
    provider = rt.endpoint_provider(settings) if settings.endpoint_url else None
    return {"endpoint": settings.endpoint_url} | await diagnostics.endpoint_models(provider)


@router.post("/test-connection")
async def test_connection(
    body: Any = Body(None), uid: int = Depends(user_id), rt: Runtime = Depends(runtime)
) -> dict[str, Any]:
    """A short real generation and an embedding with the saved settings, or with unsaved
    values given in the body (so the settings page can test before saving)."""
    base = await asyncio.to_thread(rt.settings_for, uid)
    settings = base.with_overrides(_unsaved(body, rt.settings))
    return await diagnostics.test_connection(rt.models_for(settings, uid))
