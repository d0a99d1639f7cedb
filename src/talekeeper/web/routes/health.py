"""``GET /api/health``: the database, each configured model's reachability, and their names.

``GET /api/ready``: whether this process can serve, for a load balancer or a supervisor. It
answers anyone (accounts mode too: a probe has no account), so it says only "ok" (200: the
database answers) or "down" (503), never why, which version or which models.
"""

from __future__ import annotations

import asyncio
from enum import StrEnum

from fastapi import APIRouter, Depends
from fastapi.responses import JSONResponse
from pydantic import BaseModel

from talekeeper import __version__
from talekeeper.bootstrap import Runtime
from talekeeper.services.endpoints import diagnostics
from talekeeper.web.deps import runtime, user_id

router = APIRouter(tags=["health"])


class ReadyState(StrEnum):
    OK = "ok"
    DOWN = "down"


class Readiness(BaseModel):
    status: ReadyState


class HealthState(StrEnum):
    OK = "ok"  # the database at the schema's head and every configured model reachable
    DEGRADED = "degraded"  # the database answers, a model does not
    DOWN = "down"  # the database does not answer, or not at the schema's head


class DatabaseHealth(BaseModel):
    ok: bool
    dialect: str | None = None
    revision: str | None = None
    error: str | None = None  # present only when not ok


class ModelHealth(BaseModel):
    model: str
    provider: str
    ok: bool
    latency_ms: float | None = None
    error: str | None = None  # present only when not ok


class Health(BaseModel):
    """Keys that do not apply are left out of the answer (no embedder: no ``embedding``)."""

    status: HealthState
    version: str
    database: DatabaseHealth
    models: dict[str, str]  # narrator, summary, embedding: the names in use
    placeholder_narrator: bool
    notes: list[str]
    embedded_loaded: dict[str, bool]  # per embedded model: loaded in this process yet
    narrator: ModelHealth
    embedding: ModelHealth | None = None
    summary: ModelHealth | None = None  # only when another model than the narrator writes


def _answers(rt: Runtime) -> bool:
    try:
        rt.ping_database()
    except Exception:  # noqa: BLE001 - any failure to reach the database is "down"
        return False
    return True


@router.get("/api/ready", response_model=Readiness, responses={503: {"model": Readiness}})
async def ready(rt: Runtime = Depends(runtime)) -> JSONResponse:
    if await asyncio.to_thread(_answers, rt):
        return JSONResponse(Readiness(status=ReadyState.OK).model_dump(mode="json"))
    down = Readiness(status=ReadyState.DOWN).model_dump(mode="json")
    return JSONResponse(down, status_code=503, headers={"Retry-After": "5"})


def _database(rt: Runtime) -> DatabaseHealth:
    try:  # reading the revision reaches the database (read-only): no separate ping
        revision, head = rt.schema_revision(), rt.schema_head
    except Exception as exc:  # noqa: BLE001 - health reports any database failure as data
        return DatabaseHealth(ok=False, error=f"{type(exc).__name__}: {exc}")
    return DatabaseHealth(
        ok=revision == head,
        dialect=rt.engine.dialect.name,
        revision=revision,
        error=None if revision == head else f"schema at {revision}, expected {head}",
    )


@router.get("/api/health", response_model=Health, responses={503: {"model": Health}})
async def health(rt: Runtime = Depends(runtime), uid: int = Depends(user_id)) -> JSONResponse:
    database = await asyncio.to_thread(_database, rt)
    settings = await asyncio.to_thread(rt.settings_for, uid)
    models = rt.models_for(settings, uid)
    checks: dict[str, diagnostics.Reachability] = {
        "narrator": await diagnostics.check_reachable(models.narrator)
    }
    if models.embedding is not None:
        checks["embedding"] = await diagnostics.check_reachable(models.embedding)
    if models.summary is not None and models.summary.model != models.narrator.model:
        checks["summary"] = await diagnostics.check_reachable(models.summary)
    ok = database.ok and all(c.ok for c in checks.values())
    body = Health(
        status=HealthState.OK
        if ok
        else (HealthState.DEGRADED if database.ok else HealthState.DOWN),
        version=__version__,
        database=database,
        models=models.names(),
        placeholder_narrator=models.narrator.provider.info.placeholder,
        notes=list(models.narrator.provider.info.notes),
        embedded_loaded=rt.embedded.loaded(),
        **{
            kind: ModelHealth.model_validate(check, from_attributes=True)
            for kind, check in checks.items()
        },
    )
    return JSONResponse(
        body.model_dump(mode="json", exclude_none=True),
        status_code=200 if database.ok else 503,
    )
