"""A user's knowledge library: sources uploaded, listed, deleted, re-indexed and attached to
adventures (the rules; ``storage.repositories.library`` holds the statements).

Invariants:

- An upload is read and split with no transaction open (``prepare``: CPU work never holds
  the write lock; the web upload runs it in a child process whose CPU time and memory are
  bounded, ``parsing.prepare``), then stored in one write unit (``store``): the source,
  all its passages and their full-text rows, or nothing. A file that cannot be read is
  refused with the reason (``InvalidInput``) and leaves no row. So is a file that is not
  one of the kinds read: an empty body, a name ending .pdf or .epub on bytes that are not
  one, bytes with an image's, archive's or program's signature or NUL bytes (refused by
  the reader, naming what they look like), and bytes that decode to no text (control
  characters), which would otherwise be stored as plain text full of garbage.
- Caps are checked before anything is written: ``CAPS.file_bytes`` a file,
  ``MAX_SOURCES`` sources and ``MAX_PASSAGES`` passages a user (409 ``limit_reached``).
- A source belongs to one user; another user's source is "not found", never "forbidden"
  (its existence is not told). An adventure's attachments are sources of the adventure's
  own user.
- ``state`` follows the vectors: ``indexing`` while passages lack a vector of
  ``vector_model`` (the owner's embedding model), ``ready`` when none does, ``failed``
  when the last batch failed (``error``, ``retry_at``), ``words_only`` when the owner has
  no embedding model. ``sync_model`` moves a source whose vectors are of another model
  back to ``indexing``; the indexer (``services.library.indexer``) does the rest.
- Passages are split with the cl100k tokenizer into at most ``PASSAGE_TOKENS`` tokens, so
  a passage's size does not depend on which narrator is configured.
"""

from __future__ import annotations

import json
import os
import re
import unicodedata
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy.orm import Session

from talekeeper.core.errors import Conflict, InvalidInput, NotFound
from talekeeper.core.tokens import TokenCounter
from talekeeper.services.common import limits
from talekeeper.services.library.documents import CAPS, Caps, read_document
from talekeeper.services.library.model import DocumentKind
from talekeeper.services.library.passages import Passage, split_passages
from talekeeper.services.memory.terms import terms
from talekeeper.storage.models import Adventure
from talekeeper.storage.models import LibrarySource as LibrarySource  # the rows it returns
from talekeeper.storage.repositories.library import LibraryRepository, NewPassage, PassageTerms
from talekeeper.storage.vocabulary import SourceState

PASSAGE_TOKENS = 160  # a paragraph or two; well within the embedder's 256 word pieces
MIN_PASSAGE_TOKENS = 40
MAX_SOURCES = 1_000  # sources of one user
MAX_PASSAGES = 250_000  # passages of one user, every source (about 150 MB of text)
MAX_ATTACHED = 100  # sources attached to one adventure
FILENAME_MAX = 255
TITLE_MAX = 300
KINDS = ".txt, .md, .html, .pdf or .epub"
# Characters no text file holds: C0 and C1 controls that are not whitespace (nor the
# DOS end-of-file mark and the escape of terminal colours, which real text files carry)
# and the replacement character of undecodable bytes. Past this share of a text (and a
# stray few), it is binary: random bytes hold about one in nine.
_NOT_TEXT = re.compile("[\x01-\x08\x0e-\x19\x7f-\x9f\ufffd]")
NOT_TEXT_SHARE = 0.02


@dataclass(frozen=True)
class Prepared:
    """A file read and split, ready to store."""

    filename: str
    title: str
    kind: str
    size_bytes: int
    characters: int
    passages: list[Passage]
    passage_terms: list[str]

    @property
    def tokens(self) -> int:
        return sum(p.tokens for p in self.passages)


def clean_filename(name: str) -> str:
    """The file's own name (no folders), checked: what the source is listed under."""
    base = os.path.basename(name.replace("\\", "/")).strip()
    if not base:
        raise InvalidInput(f"Name the file: send ?filename=NAME with its extension ({KINDS}).")
    if len(base) > FILENAME_MAX:
        raise InvalidInput(
            f"The filename is {len(base)} characters; rename the file to at most {FILENAME_MAX}."
        )
    if any(unicodedata.category(c) in ("Cc", "Cf") for c in base):
        raise InvalidInput("The filename holds control characters; rename the file.")
    return base


def prepare(filename: str, data: bytes, counter: TokenCounter, *, caps: Caps = CAPS) -> Prepared:
    """Read and split a file (pure; raises ``InvalidInput`` saying what to do)."""
    name = clean_filename(filename)
    if not data:
        raise InvalidInput(
            f"{limits.quoted(name)} is empty (0 bytes): send the file's contents as the "
            "request body."
        )
    _check_named_kind(name, data)
    document = read_document(data, name, caps=caps)
    if document.kind in (DocumentKind.TXT, DocumentKind.MD, DocumentKind.HTML):
        _check_text(name, document.text)
    passages = split_passages(document, counter, PASSAGE_TOKENS, MIN_PASSAGE_TOKENS)
    if not passages:
        raise InvalidInput(f"{limits.quoted(name)} holds no text to search.")
    title = (document.title.strip() or os.path.splitext(name)[0])[:TITLE_MAX]
    return Prepared(
        filename=name,
        title=title,
        kind=document.kind.value,
        size_bytes=len(data),
        characters=sum(len(p.text) for p in passages),
        passages=passages,
        passage_terms=[" ".join(terms(p.text)) for p in passages],
    )


def _check_named_kind(name: str, data: bytes) -> None:
    """A file named .pdf or .epub must be one: read as text, it would be stored as garbage."""
    suffix = os.path.splitext(name)[1].lower()
    if suffix == ".pdf" and data[:1024].find(b"%PDF-") == -1:
        raise InvalidInput(
            f"{limits.quoted(name)} is named .pdf but is not a PDF (it lacks the %PDF- "
            "header): check that the download is complete, or export the document as PDF "
            "again."
        )
    if suffix == ".epub" and not data.startswith(b"PK\x03\x04"):
        raise InvalidInput(
            f"{limits.quoted(name)} is named .epub but is not an EPUB (an EPUB is a ZIP "
            "archive): check that the download is complete, or export the e-book again."
        )


def _check_text(name: str, text: str) -> None:
    if len(_NOT_TEXT.findall(text)) > max(NOT_TEXT_SHARE * len(text), 2):
        raise InvalidInput(
            f"{limits.quoted(name)} is not a text document: its bytes hold control "
            f"characters, as a program, an image or an archive does. Upload a {KINDS} file."
        )


def check_room(session: Session, user_id: int) -> tuple[int, int]:
    """The user's sources and passages, or ``Conflict`` when no source can be added (cheap:
    asked again before a file is read, so a full library does not cost a parse)."""
    sources, passages = LibraryRepository(session).size(user_id)
    if sources >= MAX_SOURCES:
        raise Conflict(
            f"Your library holds {sources:,} sources, the most one user may keep: delete "
            "sources you no longer use first.",
            code="limit_reached",
        )
    return sources, passages


def store(
    session: Session, user_id: int, prepared: Prepared, embedding_model: str | None
) -> LibrarySource:
    """Write a prepared source with its passages and their index, in the caller's unit."""
    _, passages = check_room(session, user_id)
    if passages + len(prepared.passages) > MAX_PASSAGES:
        raise Conflict(
            f"Your library holds {passages:,} passages and this file would add "
            f"{len(prepared.passages):,}; one user may keep at most {MAX_PASSAGES:,}. "
            "Delete sources you no longer use first.",
            code="limit_reached",
        )
    source = LibrarySource(
        user_id=user_id,
        title=prepared.title,
        filename=prepared.filename,
        kind=prepared.kind,
        size_bytes=prepared.size_bytes,
        characters=prepared.characters,
        passage_count=len(prepared.passages),
        token_count=prepared.tokens,
        state=SourceState.INDEXING if embedding_model else SourceState.WORDS_ONLY,
        vector_model=embedding_model,
        embedded=0,
        revision=0,
        failures=0,
    )
    LibraryRepository(session).add(
        source,
        [
            NewPassage(
                position=p.ordinal,
                heading_path=json.dumps(list(p.heading_path), ensure_ascii=False),
                page=p.page,
                text=p.text,
                tokens=p.tokens,
                terms=t,
            )
            for p, t in zip(prepared.passages, prepared.passage_terms, strict=True)
        ],
    )
    return source


def source(session: Session, user_id: int, source_id: int) -> LibrarySource:
    row = LibraryRepository(session).get(source_id) if 0 < source_id <= limits.MAX_ID else None
    if row is None or row.user_id != user_id:
        raise NotFound(f"There is no library source {source_id}.")
    return row


def sources(session: Session, user_id: int) -> list[LibrarySource]:
    return LibraryRepository(session).sources(user_id)


def attached_counts(session: Session, source_ids: list[int]) -> dict[int, int]:
    """How many adventures each source is attached to."""
    return LibraryRepository(session).attachment_counts(source_ids)


def remove(session: Session, user_id: int, source_id: int) -> None:
    row = source(session, user_id, source_id)
    LibraryRepository(session).delete(row)


def reindex(
    session: Session, user_id: int, source_id: int, embedding_model: str | None
) -> LibrarySource:
    """Index a source again from its passages: terms and full-text rows rebuilt, vectors
    dropped and made again in the background."""
    row = source(session, user_id, source_id)
    library = LibraryRepository(session)
    library.unindex(row.id)
    library.replace_terms(
        [PassageTerms(pid, " ".join(terms(text))) for pid, text in library.passage_texts(row.id)]
    )
    library.index(row.id)
    _restart(row, embedding_model)
    return row


def _restart(row: LibrarySource, embedding_model: str | None) -> None:
    row.state = SourceState.INDEXING if embedding_model else SourceState.WORDS_ONLY
    row.vector_model = embedding_model
    row.embedded = 0
    row.revision += 1
    row.error = None
    row.failures = 0
    row.retry_at = None


def out_of_sync(vector_model: str | None, state: str, embedding_model: str | None) -> bool:
    """Whether a source with these vectors and state must change for ``embedding_model``."""
    if vector_model != embedding_model:
        return True
    return embedding_model is None and state != SourceState.WORDS_ONLY


def sync_model(session: Session, user_id: int, embedding_model: str | None) -> int:
    """Sources of ``user_id`` whose vectors are not of ``embedding_model`` start again
    (their old vectors stay until replaced, unused). Returns how many changed."""
    changed = 0
    for row in sources(session, user_id):
        if not out_of_sync(row.vector_model, row.state, embedding_model):
            continue
        if row.vector_model == embedding_model:  # no model, and still marked for vectors
            row.state = SourceState.WORDS_ONLY
        else:
            _restart(row, embedding_model)
        changed += 1
    return changed


def attached(session: Session, adventure_id: int) -> list[LibrarySource]:
    return LibraryRepository(session).attached(adventure_id)


def attached_ids(session: Session, adventure_id: int) -> list[int]:
    return LibraryRepository(session).attached_ids(adventure_id)


def set_attached(session: Session, adventure: Adventure, source_ids: list[Any]) -> None:
    """Attach exactly ``source_ids`` (the adventure's user's sources) to ``adventure``."""
    wanted: list[int] = []
    for value in source_ids:
        if isinstance(value, bool) or not isinstance(value, int) or not 0 < value <= limits.MAX_ID:
            raise InvalidInput(
                f"'source_ids' holds {limits.quoted(value)}; give the ids of library sources "
                "(whole numbers)."
            )
        wanted.append(value)
    wanted = list(dict.fromkeys(wanted))  # the first of each, in order
    if len(wanted) > MAX_ATTACHED:
        raise InvalidInput(
            f"{len(wanted)} sources: an adventure may have at most {MAX_ATTACHED} attached."
        )
    for source_id in wanted:
        source(session, adventure.user_id, source_id)  # 404 for one that is not theirs
    library = LibraryRepository(session)
    now = set(library.attached_ids(adventure.id))
    gone = now - set(wanted)
    if gone:
        library.detach(adventure.id, gone)
    library.attach(adventure.id, [s for s in wanted if s not in now])


def _iso(value: datetime | None) -> str | None:
    return value.isoformat() if value else None


def source_view(row: LibrarySource, attached_to: int | None = None) -> dict[str, Any]:
    """A source as the API and the pages show it."""
    total = row.passage_count
    vectors = row.state != SourceState.WORDS_ONLY
    out: dict[str, Any] = {
        "id": row.id,
        "title": row.title,
        "filename": row.filename,
        "kind": row.kind,
        "size_bytes": row.size_bytes,
        "characters": row.characters,
        "passage_count": total,
        "token_count": row.token_count,
        "state": SourceState(row.state).value,
        "embedding_model": row.vector_model,
        "embedded": row.embedded if vectors else 0,
        "progress": (round(row.embedded / total, 4) if total and vectors else 0.0),
        "error": row.error,
        "retry_at": _iso(row.retry_at),
        "created_at": _iso(row.created_at),
    }
    if attached_to is not None:
        out["attached_to"] = attached_to
    return out
