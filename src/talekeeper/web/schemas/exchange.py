"""What an import answers: the new adventure, and what of the file's library references
was attached and what the importing user's library lacks. (An export answers the file
itself, whose model is the format's own: ``services.exchange.ExportedFile``.)"""

from __future__ import annotations

from pydantic import ConfigDict

from talekeeper.web.schemas.common import Out


class SourceRefOut(Out):
    """A library source an export file names (by reference, not its text)."""

    title: str
    filename: str
    kind: str
    size_bytes: int
    passage_count: int


class ImportedOut(Out):
    """The new adventure as ``GET /api/adventures/{id}`` shows it, plus what of the file's
    library references was attached and what the importing user's library lacks."""

    model_config = ConfigDict(extra="allow")  # the adventure's own fields, as its view has them
    id: int
    title: str
    attached_sources: list[int]
    unmatched_sources: list[SourceRefOut]
    warnings: list[str]
