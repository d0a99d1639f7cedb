"""Attached library sources in the export format (version 3): by reference, never their text.

The export lists the attached sources; an import attaches the importing user's own source of
the same file name and size, else of the same title, and reports every reference it could not
match without failing; a file that names no source is written and read as version 2; a
hostile ``knowledge`` value is a 400 with its JSON path and nothing is written.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import func, select
from sqlalchemy.orm import Session, sessionmaker
from tests.conftest import TEST_HASHER, TEST_PASSWORD
from tests.kit.exchange import version_2_file

from talekeeper.core.errors import InvalidInput
from talekeeper.core.tokens import BpeCounter
from talekeeper.services import exchange
from talekeeper.services.accounts.users import create_user
from talekeeper.services.library import store
from talekeeper.services.memory.base import NullMemory
from talekeeper.storage.db import session_scope
from talekeeper.storage.models import Adventure
from talekeeper.storage.repositories.users import UserRepository

OCTETS = {"Content-Type": "application/octet-stream"}
ATLAS = b"""# Atlas of the Salt Coast

Gullhaven is a fishing town of slate roofs; its harbour freezes every third winter.

The Drowned Library lies below Marrow Point and opens at the lowest tide of the year.
"""
ATLAS_REVISED = ATLAS + b"\nThe archivist Ysolde keeps the keys of the Drowned Library.\n"
NOTES = b"Session notes. Orrin owes the harbour master forty crowns.\n"
LOST = b"Notes nobody kept. The lighthouse keeper was never seen again.\n"


def local_user(sessions: sessionmaker[Session]) -> int:
    with session_scope(sessions) as session:
        return UserRepository(session).local_user().id


def other_user(sessions: sessionmaker[Session], name: str = "bob") -> int:
    with session_scope(sessions) as session:
        return create_user(session, name, TEST_PASSWORD, hasher=TEST_HASHER).id


def add_source(sessions: sessionmaker[Session], uid: int, name: str, data: bytes) -> int:
    prepared = store.prepare(name, data, BpeCounter())
    with session_scope(sessions) as session:
        row = store.store(session, uid, prepared, None)
        session.flush()
        return row.id


def import_file(sessions: sessionmaker[Session], uid: int, data: Any) -> exchange.Imported:
    with session_scope(sessions) as session:
        return exchange.import_with_report(session, uid, copy.deepcopy(data), NullMemory())


def export_of(sessions: sessionmaker[Session], adventure: int, uid: int) -> dict[str, Any]:
    with session_scope(sessions) as session:
        return exchange.export(session, adventure, uid)


def attach(sessions: sessionmaker[Session], adventure: int, source_ids: list[int]) -> None:
    with session_scope(sessions) as session:
        row = session.get(Adventure, adventure)
        assert row is not None
        store.set_attached(session, row, source_ids)


def attached(sessions: sessionmaker[Session], adventure: int) -> list[int]:
    with session_scope(sessions) as session:
        return store.attached_ids(session, adventure)


def reference(title: str, filename: str, data: bytes) -> dict[str, Any]:
    """What an export says of a source of ``data``, as the reader made it."""
    prepared = store.prepare(filename, data, BpeCounter())
    assert prepared.title == title
    return {
        "title": title,
        "filename": filename,
        "kind": prepared.kind,
        "size_bytes": len(data),
        "passage_count": len(prepared.passages),
    }


def with_knowledge(*refs: dict[str, Any]) -> dict[str, Any]:
    data = version_2_file()
    data["version"] = 3
    data["knowledge"] = list(refs)
    return data


# -- through the service ---------------------------------------------------------------------


def test_attached_sources_travel_by_reference_and_come_back_attached(
    sessions: sessionmaker[Session],
) -> None:
    uid = local_user(sessions)
    atlas = add_source(sessions, uid, "atlas.md", ATLAS)
    add_source(sessions, uid, "unrelated.txt", LOST)
    notes = add_source(sessions, uid, "notes.txt", NOTES)
    first = import_file(sessions, uid, version_2_file())
    assert first.attached == [] and first.warnings == []
    adventure = first.adventure.id
    assert export_of(sessions, adventure, uid)["version"] == 2  # nothing attached yet
    attach(sessions, adventure, [notes, atlas])

    exported = export_of(sessions, adventure, uid)
    assert exported["version"] == 3
    assert exported["knowledge"] == [  # in the order of the sources' ids
        reference("Atlas of the Salt Coast", "atlas.md", ATLAS),
        reference("notes", "notes.txt", NOTES),
    ]
    assert "Marrow Point" not in json.dumps(exported)  # no passage travels
    assert {k: v for k, v in exported.items() if k not in ("knowledge", "version")} == {
        k: v for k, v in version_2_file().items() if k != "version"
    }

    again = import_file(sessions, uid, exported)
    assert again.attached == [atlas, notes] and again.unmatched == [] and again.warnings == []
    assert attached(sessions, again.adventure.id) == [atlas, notes]
    assert export_of(sessions, again.adventure.id, uid) == exported  # nothing drifts


def test_another_users_import_attaches_their_own_sources_and_reports_the_rest(
    sessions: sessionmaker[Session],
) -> None:
    mara = local_user(sessions)
    sources = [
        add_source(sessions, mara, "atlas.md", ATLAS),
        add_source(sessions, mara, "notes.txt", NOTES),
        add_source(sessions, mara, "lost.txt", LOST),
    ]
    adventure = import_file(sessions, mara, version_2_file()).adventure.id
    attach(sessions, adventure, sources)
    file = export_of(sessions, adventure, mara)

    bob = other_user(sessions)
    nothing = import_file(sessions, bob, file)  # none of Mara's sources is Bob's
    assert nothing.attached == [] and attached(sessions, nothing.adventure.id) == []
    assert [ref.filename for ref in nothing.unmatched] == ["atlas.md", "notes.txt", "lost.txt"]
    assert len(nothing.warnings) == 3 and "'lost.txt'" in nothing.warnings[2]
    assert "not in your library" in nothing.warnings[2]
    assert export_of(sessions, nothing.adventure.id, bob)["version"] == 2

    notes = add_source(sessions, bob, "notes.txt", NOTES)  # the same file: name and size
    revised = add_source(sessions, bob, "atlas-revised.md", ATLAS_REVISED)  # the same title
    imported = import_file(sessions, bob, file)
    assert imported.attached == [revised, notes]
    assert attached(sessions, imported.adventure.id) == sorted([revised, notes])
    assert [ref.filename for ref in imported.unmatched] == ["lost.txt"]
    assert imported.warnings == [
        "The library source 'lost' ('lost.txt', 63 bytes) is not in your library, so it was "
        "not attached: add the file to your library, then attach it to this adventure."
    ]
    assert [ref.model_dump() for ref in imported.unmatched] == [reference("lost", "lost.txt", LOST)]
    with session_scope(sessions) as session:  # Mara's adventure kept its own attachments
        assert store.attached_ids(session, adventure) == sources


def test_a_file_match_comes_before_a_title_and_no_source_is_attached_twice(
    sessions: sessionmaker[Session],
) -> None:
    uid = local_user(sessions)
    older = add_source(sessions, uid, "atlas-2.md", ATLAS_REVISED)
    newer = add_source(sessions, uid, "atlas-2.md", ATLAS_REVISED)  # uploaded again
    title = "Atlas of the Salt Coast"
    first, second = reference(title, "atlas-1.md", ATLAS), reference(title, "atlas-2.md", ATLAS)
    second["size_bytes"] = len(ATLAS_REVISED)
    # The first reference's title would take the newest copy; the second's file name and
    # size name it, so the first gets the older copy by title.
    both = import_file(sessions, uid, with_knowledge(first, second))
    assert both.attached == [older, newer] and both.unmatched == []
    only = import_file(sessions, uid, with_knowledge(second, second, second))
    assert only.attached == [newer, older]  # each reference a source of its own
    assert [ref.filename for ref in only.unmatched] == ["atlas-2.md"]


def test_a_version_3_file_naming_no_source_is_read_and_written_as_version_2(
    sessions: sessionmaker[Session],
) -> None:
    uid = local_user(sessions)
    for data in (with_knowledge(), {**version_2_file(), "version": 3}):
        imported = import_file(sessions, uid, data)
        assert imported.attached == [] and imported.warnings == []
        assert export_of(sessions, imported.adventure.id, uid) == version_2_file()


def test_a_bad_reference_is_refused_by_the_service_with_its_path(
    sessions: sessionmaker[Session],
) -> None:
    uid = local_user(sessions)
    bad = with_knowledge({"title": "Atlas", "filename": "atlas.md", "size_bytes": "12"})
    with pytest.raises(InvalidInput) as refused:
        import_file(sessions, uid, bad)
    assert "file.knowledge[0].size_bytes must be a whole number" in refused.value.message
    with session_scope(sessions) as session:
        assert session.scalar(select(func.count()).select_from(Adventure)) == 0


# -- through the API -------------------------------------------------------------------------


def upload(client: TestClient, name: str, data: bytes) -> int:
    made = client.post("/api/library", params={"filename": name}, content=data, headers=OCTETS)
    assert made.status_code == 201, made.text
    return int(made.json()["id"])


def knowledge_of(client: TestClient, adventure: int) -> list[int]:
    got = client.get(f"/api/adventures/{adventure}/knowledge")
    assert got.status_code == 200, got.text
    return [s["id"] for s in got.json()["sources"]]


def test_export_and_import_routes_carry_the_attachments(client: TestClient) -> None:
    atlas, notes = upload(client, "atlas.md", ATLAS), upload(client, "notes.txt", NOTES)
    made = client.post("/api/adventures/import", json=version_2_file())
    assert made.status_code == 201, made.text
    adventure = made.json()["id"]
    put = client.put(f"/api/adventures/{adventure}/knowledge", json={"source_ids": [atlas, notes]})
    assert put.status_code == 200, put.text

    exported = client.get(f"/api/adventures/{adventure}/export").json()
    assert exported["version"] == 3
    assert [r["filename"] for r in exported["knowledge"]] == ["atlas.md", "notes.txt"]
    again = client.post("/api/adventures/import", json=exported)
    assert again.status_code == 201, again.text
    assert knowledge_of(client, again.json()["id"]) == [atlas, notes]
    assert again.json()["attached_sources"] == [atlas, notes]
    assert again.json()["unmatched_sources"] == again.json()["warnings"] == []

    assert client.delete(f"/api/library/{atlas}").status_code == 204
    partly = client.post("/api/adventures/import", json=exported)  # the atlas is gone
    assert partly.status_code == 201, partly.text
    assert knowledge_of(client, partly.json()["id"]) == [notes]
    answer = partly.json()
    assert answer["attached_sources"] == [notes]
    assert [r["filename"] for r in answer["unmatched_sources"]] == ["atlas.md"]
    assert len(answer["warnings"]) == 1 and "atlas.md" in answer["warnings"][0]
    assert knowledge_of(client, adventure) == [notes]  # deleting detached it everywhere


Damage = Callable[[dict[str, Any]], Any]

# Each damages the ``knowledge`` section of a version 3 file; the refusal names this.
BAD_KNOWLEDGE: dict[str, tuple[Damage, str]] = {
    "not a list": (lambda f: f.update(knowledge={"title": "x"}), "file.knowledge must be a list"),
    "text": (lambda f: f.update(knowledge="atlas.md"), "file.knowledge must be a list"),
    "not an object": (lambda f: f["knowledge"].append(7), "file.knowledge[1] must be an object"),
    "title type": (lambda f: f["knowledge"][0].update(title=5), "file.knowledge[0].title"),
    "empty title": (lambda f: f["knowledge"][0].update(title=" "), "file.knowledge[0].title"),
    "long name": (
        lambda f: f["knowledge"][0].update(filename="a" * 256),
        "file.knowledge[0].filename must be non-empty text of at most 255",
    ),
    "no name": (lambda f: f["knowledge"][0].pop("filename"), "file.knowledge[0].filename"),
    "kind": (lambda f: f["knowledge"][0].update(kind=["pdf"]), "file.knowledge[0].kind"),
    "size text": (lambda f: f["knowledge"][0].update(size_bytes="9"), "[0].size_bytes"),
    "size bool": (lambda f: f["knowledge"][0].update(size_bytes=True), "[0].size_bytes"),
    "size < 0": (lambda f: f["knowledge"][0].update(size_bytes=-1), "[0].size_bytes"),
    "huge size": (lambda f: f["knowledge"][0].update(size_bytes=2**63), "[0].size_bytes"),
    "passages": (lambda f: f["knowledge"][0].pop("passage_count"), "[0].passage_count"),
    "too many": (
        lambda f: f.update(knowledge=f["knowledge"] * (store.MAX_ATTACHED + 1)),
        f"{store.MAX_ATTACHED + 1:,} attached library sources; an adventure holds at most "
        f"{store.MAX_ATTACHED:,}",
    ),
    "version 2": (lambda f: f.update(version=2), "unknown section 'knowledge'"),
}


@pytest.mark.parametrize("case", sorted(BAD_KNOWLEDGE))
def test_a_hostile_knowledge_section_is_a_400_that_names_it(client: TestClient, case: str) -> None:
    damage, expected = BAD_KNOWLEDGE[case]
    data = with_knowledge(reference("notes", "notes.txt", NOTES))
    damage(data)
    refused = client.post("/api/adventures/import", json=data)
    assert refused.status_code == 400, refused.text
    error = refused.json()["error"]
    assert error["code"] in ("invalid_input", "limit_reached")
    assert expected in error["message"], error["message"]
    assert client.get("/api/adventures").json() in ([], {"adventures": []})  # nothing kept
