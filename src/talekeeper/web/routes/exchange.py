"""An adventure as a file: export one, import one as a new adventure.

The file's shape is the format's model (``services.exchange.ExportedFile``), which the
export answers as it is; an import body that is not JSON is refused before the service
reads it, and the service refuses a file that is not an export with the path of what to fix.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Body, Depends
from sqlalchemy.orm import Session

from talekeeper.bootstrap import Runtime
from talekeeper.core.errors import InvalidInput
from talekeeper.services import exchange
from talekeeper.services.exchange.fileformat import (
    AdventureFileV2,
    AdventureFileV3,
    AdventureFileV4,
)
from talekeeper.services.story import adventures
from talekeeper.services.story.tree import Story
from talekeeper.web.deps import DB, RowId, runtime, user_id
from talekeeper.web.errors import NOT_JSON
from talekeeper.web.schemas.adventures import AdventureOut
from talekeeper.web.schemas.exchange import ImportedOut, SourceRefOut

router = APIRouter(tags=["adventures"])


@router.get("/api/adventures/{adventure_id}/export", response_model=exchange.ExportedFile)
def export_adventure(
    adventure_id: RowId,
    session: Session = DB,
    uid: int = Depends(user_id),
) -> AdventureFileV2 | AdventureFileV3 | AdventureFileV4:
    return exchange.export_file(session, adventure_id, uid)


@router.post("/api/adventures/import", status_code=201, response_model=ImportedOut)
def import_adventure(
    body: Any = Body(...),
    session: Session = DB,
    uid: int = Depends(user_id),
    rt: Runtime = Depends(runtime),
) -> ImportedOut:
    if isinstance(body, bytes):  # FastAPI hands over raw bytes when the Content-Type is not JSON
        raise InvalidInput(NOT_JSON)
    imported = exchange.import_with_report(session, uid, body, rt.memory)
    story = Story.load(session, imported.adventure.id, uid, rt.memory)
    # The adventure as its own route answers it, beside what of the file's library
    # references was attached and what this user's library lacks.
    adventure = AdventureOut.model_validate(adventures.adventure_view(story))
    return ImportedOut(
        **dict(adventure),
        attached_sources=imported.attached,
        unmatched_sources=[SourceRefOut.model_validate(ref) for ref in imported.unmatched],
        warnings=imported.warnings,
    )
