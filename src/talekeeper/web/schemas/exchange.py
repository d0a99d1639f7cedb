"""What an import answers: the new adventure, and what of the file's library references
was attached and what the importing user's library lacks. (An export answers the file
itself, whose model is the format's own: ``services.exchange.ExportedFile``.)"""

from __future__ import annotations

from talekeeper.web.schemas.adventures import AdventureOut
from talekeeper.web.schemas.common import Out


class SourceRefOut(Out):
    """A library source an export file names (by reference, not its text)."""

    title: str
    filename: str
    kind: str
    size_bytes: int
    passage_count: int


class ImportedHead(Out):
    """The keys an import's answer begins with: the adventure's id and title, then what of
    the file's library references was attached and what the importing user's library
    lacks."""

    id: int
    title: str
    attached_sources: list[int]
    unmatched_sources: list[SourceRefOut]
    warnings: list[str]


# AdventureOut first among the bases: pydantic orders fields from the last base to the
# first, so the head's keys come first and the answer keeps the order it has always had.
class ImportedOut(AdventureOut, ImportedHead):
    """The new adventure as ``GET /api/adventures/{id}`` shows it, plus what of the file's
    library references was attached and what the importing user's library lacks."""
