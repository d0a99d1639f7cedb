"""Per-user settings, the endpoint's model list and the connection test.

Invariants:

- The API key is write-only: responses carry ``api_key_set`` (true/false), never
  the key, and a secret's server default is never described either.
- A PATCH is validated as a whole (every value, then the combination) before
  anything is saved; ``null`` removes an override (back to the server default).
- An endpoint URL's credentials (``user:password@``) are a secret like the key:
  the URL is sent back without them, with ``endpoint_credentials_set``
  (true/false) beside it. The page shows the URL as sent back and sends only
  what was changed, so saved credentials stay saved until the URL is retyped.
- The model list and the connection test may use unsaved values from the body
  (the settings page asks before it saves), with ``null`` meaning the server
  default as in a PATCH; each value is checked like a save would check it, and
  nothing is stored. A model server that fails is a
  readable ``error`` in a 200 answer, never a 5xx: it is the thing being tested.
- A key goes only to the endpoint it was given for: a key typed in the body to
  the body's endpoint, the saved key only to the saved endpoint, the server's
  key (``"api_key": null``) only to the server's endpoint; any other URL is
  tried with no key. An endpoint other than the saved one is a probe: its
  answers' text is never repeated (its status and what it means are), so no
  URL typed here can be made to show what a page behind it says.
- ``GET /detect`` lists the local model servers (``services.endpoints.detect``: loopback only, the
  configured ports, never this server's own); it takes nothing from the client.
- Accounts mode: the endpoint and its key are the server's (``TALEKEEPER_ENDPOINT_URL``,
  ``TALEKEEPER_API_KEY``), unless ``TALEKEEPER_USER_ENDPOINTS=allow``: a body naming
  ``endpoint_url`` or ``api_key`` is refused (403) on every route here, and overrides
  saved before (in local mode) are not used (``Runtime.user_settings``). A URL of a
  user's choosing makes the server fetch it: that is for the administrator to permit.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

from fastapi import APIRouter, Body, Depends, Request
from sqlalchemy.orm import Session

from talekeeper.bootstrap import Runtime
from talekeeper.core.errors import InvalidInput, TalekeeperError
from talekeeper.providers.base import split_userinfo, without_userinfo
from talekeeper.services.endpoints import diagnostics
from talekeeper.services.endpoints.detect import LocalServer, detect
from talekeeper.services.endpoints.diagnostics import ConnectionTest
from talekeeper.setting_values import Setting
from talekeeper.settings import (
    EMBEDDED,
    EXTRACTIVE,
    NO_EMBEDDINGS,
    REGISTRY,
    RULES,
    SERVER_OWNED,
    Settings,
    per_user_setting,
)
from talekeeper.web.deps import DB, runtime, user_id
from talekeeper.web.errors import NOT_JSON
from talekeeper.web.schemas.settings import (
    ConnectionTestOut,
    EndpointModelsOut,
    LocalServerOut,
    SavedSettingsOut,
    SettingOut,
    SettingsOut,
    SettingValue,
    SpecialValueOut,
)

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
    "world_model": ((RULES, "no model: patterns read the story"),),
    "embedding_model": (
        (EMBEDDED, "the in-process embedder"),
        (NO_EMBEDDINGS, "no embeddings: the Memory Bank is off"),
    ),
}
# What reaching the endpoint depends on; the model list needs nothing else.
ENDPOINT_KEYS = ("endpoint_url", "api_key", "timeout")
# The model settings of a model-list probe: the list is the endpoint's whatever the form's
# model fields say, so the rule that a named model needs an endpoint is left to the save.
NO_MODELS = {
    "model": EMBEDDED,
    "summary_model": "",
    "world_model": RULES,
    "embedding_model": EMBEDDED,
}


class EndpointServerWide(TalekeeperError):
    status = 403
    code = "endpoint_server_wide"

    def __init__(self) -> None:
        super().__init__(
            "The model endpoint and its API key are set for the whole server by its "
            "administrator (TALEKEEPER_ENDPOINT_URL, TALEKEEPER_API_KEY): pick a model from "
            "its list instead. An administrator may let players set their own with "
            "TALEKEEPER_USER_ENDPOINTS=allow."
        )


def _endpoint_allowed(rt: Runtime, body: Any) -> None:
    """Refuse a body that sets the endpoint or its key where they are the server's."""
    if isinstance(body, dict) and set(body) & SERVER_OWNED and rt.endpoints_fixed():
        raise EndpointServerWide()


def _overrides(body: Any) -> dict[str, object]:
    if body is None:
        return {}
    if isinstance(body, bytes):  # FastAPI hands over raw bytes when the Content-Type is not JSON
        raise InvalidInput(NOT_JSON)
    if not isinstance(body, dict):
        raise InvalidInput('Send a JSON object of settings, e.g. {"model": "llama3.2"}.')
    return body


def _unsaved(body: Any, defaults: Settings) -> dict[str, object]:
    """A body of unsaved values, ``null`` standing for the server default (as in a PATCH)."""
    values = dict(_overrides(body))
    for key, raw in values.items():
        setting = per_user_setting(key)  # refuses a key that is not a per-user setting
        if raw is None:
            values[key] = getattr(defaults, key)
        else:
            setting.parse(raw)  # each value checked as a save would check it
    return values


def _public(settings: Settings) -> dict[str, SettingValue]:
    """The values a client may see: no key, and an endpoint URL without credentials."""
    values = settings.public()
    values["endpoint_url"] = without_userinfo(settings.endpoint_url)
    values["endpoint_credentials_set"] = split_userinfo(settings.endpoint_url)[1] is not None
    return values


def _same_endpoint(a: Settings, b: Settings) -> bool:
    return a.endpoint_url.rstrip("/") == b.endpoint_url.rstrip("/")


def _trying(
    body: Any, saved: Settings, defaults: Settings, extra: Mapping[str, object] | None = None
) -> tuple[Settings, bool]:
    """The settings to try unsaved values with (``saved`` with the body's values and
    ``extra`` applied), and whether their endpoint is the saved one.

    A key not typed in the body goes only where it is configured to go: the saved key
    to the saved endpoint, the server's key to the server's; any other URL is tried
    with no key.
    """
    raw = _overrides(body)
    values = _unsaved(raw, defaults)
    settings = saved.with_overrides({**values, **(extra or {})})
    key = settings.api_key
    configured = any(
        key == owner.api_key and _same_endpoint(settings, owner) for owner in (saved, defaults)
    )
    if raw.get("api_key") is None and not configured:
        settings = settings.with_overrides({"api_key": ""})
    return settings, _same_endpoint(settings, saved)


def _describe(setting: Setting, defaults: Settings) -> SettingOut:
    special = MODEL_SETTINGS.get(setting.key)
    default: SettingValue = getattr(defaults, setting.key)
    if setting.url and isinstance(default, str):
        default = without_userinfo(default)
    return SettingOut(
        key=setting.key,
        env=setting.env,
        type=setting.kind.__name__,
        help=setting.help,
        accepts=setting.accepts(),
        choices=list(setting.choices),
        secret=setting.secret,
        minimum=setting.minimum,
        maximum=setting.maximum,
        # The server's value, which a reset goes back to; a secret's stays unsaid.
        default=None if setting.secret else default,
        names_model=special is not None,
        special=[SpecialValueOut(value=v, means=m) for v, m in special or ()],
    )


@router.get("")
def read_settings(
    session: Session = DB,
    uid: int = Depends(user_id),
    rt: Runtime = Depends(runtime),
) -> SettingsOut:
    stored = rt.stored_overrides(session, uid)
    return SettingsOut(
        values=_public(rt.effective(stored)),
        overridden=sorted(stored),
        settings=[_describe(s, rt.settings) for s in REGISTRY if s.per_user],
    )


@router.patch("")
def update_settings(
    body: Any = Body(...),
    session: Session = DB,
    uid: int = Depends(user_id),
    rt: Runtime = Depends(runtime),
) -> SavedSettingsOut:
    """Set per-user values; ``null`` removes an override (back to the server's default)."""
    _endpoint_allowed(rt, body)
    changes = _overrides(body)
    stored = rt.stored_overrides(session, uid)
    kept = {k: v for k, v in changes.items() if v is not None}
    cleared = [k for k, v in changes.items() if v is None]
    for key in cleared:
        per_user_setting(key)  # refuses a key that is not a per-user setting
        stored.pop(key, None)
    merged = rt.settings.with_overrides({**stored, **kept})  # validates values and combination
    parsed = {key: getattr(merged, key) for key in kept}
    rt.save_overrides(session, uid, {**parsed, **dict.fromkeys(cleared)})
    return SavedSettingsOut(values=_public(merged), overridden=sorted(set(stored) | set(kept)))


@router.get("/models")
async def endpoint_models(
    uid: int = Depends(user_id), rt: Runtime = Depends(runtime)
) -> EndpointModelsOut:
    """The model names the saved endpoint offers."""
    settings = await asyncio.to_thread(rt.settings_for, uid)
    return await _models(rt, settings, saved=True)


@router.post("/models")
async def endpoint_models_unsaved(
    body: Any = Body(None), uid: int = Depends(user_id), rt: Runtime = Depends(runtime)
) -> EndpointModelsOut:
    """The same, for unsaved values in the body (the endpoint URL, the key, the timeout)."""
    _endpoint_allowed(rt, body)
    _unsaved(body, rt.settings)  # every value checked as a save would check it
    endpoint = {k: v for k, v in _overrides(body).items() if k in ENDPOINT_KEYS}
    base = await asyncio.to_thread(rt.settings_for, uid)
    probe, saved = _trying(endpoint, base, rt.settings, NO_MODELS)
    return await _models(rt, probe, saved=saved)


async def _models(rt: Runtime, settings: Settings, *, saved: bool) -> EndpointModelsOut:
    provider = rt.endpoint_provider(settings, saved=saved) if settings.endpoint_url else None
    found = await diagnostics.endpoint_models(provider)
    return EndpointModelsOut(
        endpoint=without_userinfo(settings.endpoint_url),
        models=list(found.models),
        error=found.error,
        latency_ms=found.latency_ms,
    )


@router.get("/detect", response_model=list[LocalServerOut])
async def detect_local_servers(
    request: Request, uid: int = Depends(user_id), rt: Runtime = Depends(runtime)
) -> list[LocalServer]:
    """The model servers answering on this machine's usual loopback ports
    (``services.endpoints.detect``); refused where the endpoint is the server's to choose, since a
    player could not switch to one anyway."""
    if rt.endpoints_fixed():
        raise EndpointServerWide()
    server = request.scope.get("server")
    own = (rt.settings.port, server[1] if server else None)
    return await detect(rt.settings.detect_port_list, own)


@router.post("/test-connection", response_model=ConnectionTestOut)
async def test_connection(
    body: Any = Body(None), uid: int = Depends(user_id), rt: Runtime = Depends(runtime)
) -> ConnectionTest:
    """A short real generation and an embedding with the saved settings, or with unsaved
    values given in the body (so the settings page can test before saving)."""
    _endpoint_allowed(rt, body)
    base = await asyncio.to_thread(rt.settings_for, uid)
    settings, saved = _trying(body, base, rt.settings)
    return await diagnostics.test_connection(rt.models_for(settings, uid, saved=saved))
