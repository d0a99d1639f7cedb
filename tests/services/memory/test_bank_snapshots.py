"""Bank snapshots (``services.memory.snapshot``) and the cache that reads and patches them
(``services.memory.cache.BankCache``), on a real migrated database: a restart starts from
the snapshot and reads only what moved since; a snapshot that does not belong, or does
not hold together, is never used."""

from __future__ import annotations

import json
import struct
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from sqlalchemy import Engine, event
from sqlalchemy.orm import Session, sessionmaker
from tests.conftest import database_url
from tests.kit.bank import same_bank

from talekeeper.bootstrap import snapshot_folder
from talekeeper.services.memory.arrays import Bank, BankRow, lineage_mask
from talekeeper.services.memory.bank import (
    new_memory,
    set_key_vectors,
    set_keys,
    set_status,
    set_text,
    set_vector,
)
from talekeeper.services.memory.base import NullMemory
from talekeeper.services.memory.cache import BankCache, pack
from talekeeper.services.memory.evidence import Passage
from talekeeper.services.memory.keyset import KeyInput
from talekeeper.services.memory.ranking import rank
from talekeeper.services.memory.snapshot import MAGIC, Snapshots, Stamp, read, write
from talekeeper.services.memory.terms import term_set
from talekeeper.services.story import adventures
from talekeeper.settings import load_settings
from talekeeper.storage import migrate
from talekeeper.storage.db import make_engine, make_session_factory, session_scope
from talekeeper.storage.models import Adventure, Memory
from talekeeper.storage.repositories.memory_keys import KeyRepository
from talekeeper.storage.repositories.users import UserRepository

MODEL = "snapshot-test"
DIMS = 8
WORDS = ("bees", "well", "lamp", "harbour", "ring", "ledger", "gull", "rope", "salt", "bell")


@pytest.fixture
def engine(tmp_path: Path) -> Iterator[Engine]:
    engine = make_engine(database_url(tmp_path / "tk.db"))
    migrate.upgrade(engine)
    yield engine
    engine.dispose()


@pytest.fixture
def sessions(engine: Engine) -> sessionmaker[Session]:
    return make_session_factory(engine)


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    return tmp_path / "banks"


def _adventure(sessions: sessionmaker[Session]) -> tuple[int, int]:
    with session_scope(sessions) as session:
        uid = UserRepository(session).local_user().id
        story = adventures.create(session, uid, {"title": "T", "opening": "Once."}, NullMemory())
        assert story.adventure.current_branch_id is not None
        return story.adventure.id, story.adventure.current_branch_id


def _vector(rng: np.random.Generator) -> list[float]:
    return [float(x) for x in rng.standard_normal(DIMS)]


def _add(sessions: sessionmaker[Session], aid: int, branch: int, n: int, seed: int) -> list[int]:
    """``n`` embedded memories, each with three embedded keys."""
    rng = np.random.default_rng(seed)
    made = []
    with session_scope(sessions) as session:
        for i in range(n):
            words = [WORDS[int(j)] for j in rng.integers(0, len(WORDS), 3)]
            text = f"Mara {' '.join(words)} {seed}-{i}."
            memory = new_memory(
                session,
                aid,
                text,
                branch_id=branch,
                depth=i,
                vector=pack(_vector(rng)),
                vector_model=MODEL,
                source_start=i,
                source_end=i,
            )
            passages = [
                Passage(
                    i,
                    f"Toen saw the {w} by the quay.",
                    term_set(f"toen saw {w} quay"),
                    frozenset({"toen"}),
                )
                for w in words
            ]
            set_keys(session, memory, passages, None)
            session.flush()
            keys = KeyRepository(session).of(memory.id)
            set_key_vectors(session, memory, {k.id: _vector(rng) for k in keys}, MODEL, None)
            made.append(memory.id)
    return made


def _bank(sessions: sessionmaker[Session], cache: BankCache, aid: int) -> Bank:
    with session_scope(sessions) as session:
        return cache.bank(session, aid, MODEL)


def _by_id(bank: Bank) -> Bank:
    """The bank with its rows in id order (patching appends changed rows at the end; a cold
    read has them in revision order): what two banks are compared on."""
    order = np.argsort(bank.ids, kind="stable")
    rows = []
    key_inputs = []
    for r in order.tolist():
        terms = frozenset(t for t, posted in bank.postings.items() if r in posted.tolist())
        rows.append(
            BankRow(
                int(bank.ids[r]),
                int(bank.branch_ids[r]),
                int(bank.depths[r]),
                np.array(bank.vectors[r]),
                bool(bank.pinned[r]),
                bool(bank.heuristic[r]),
                terms,
            )
        )
        keys = bank.keys
        if keys is not None:
            for k in range(int(keys.starts[r]), int(keys.starts[r + 1])):
                key_terms = frozenset(
                    t for t, posted in keys.postings.items() if k in posted.tolist()
                )
                key_inputs.append(
                    KeyInput(
                        int(keys.ids[k]),
                        int(bank.ids[r]),
                        int(keys.depths[k]),
                        np.array(keys.vectors[k]),
                        key_terms,
                        frozenset(keys.names_of(k)),
                    )
                )
    return Bank.build(rows, bank.dims, key_inputs, quantize_at=10**9)


class Statements:
    """The SQL the engine runs while recording."""

    def __init__(self, engine: Engine) -> None:
        self.seen: list[str] = []
        event.listen(engine, "before_cursor_execute", self._record)

    def _record(self, conn: object, cursor: object, statement: str, *args: object) -> None:
        self.seen.append(statement)

    def reads_of(self, table: str) -> list[str]:
        return [s for s in self.seen if s.lstrip().upper().startswith("SELECT") and table in s]


# -- the file ------------------------------------------------------------------------------


def _saved(sessions: sessionmaker[Session], folder: Path, aid: int) -> Bank:
    cache = BankCache(snapshots=Snapshots(folder), snapshot_at=1)
    bank = _bank(sessions, cache, aid)
    cache.wait_saved()
    assert Snapshots(folder).path(aid, MODEL).exists()
    return bank


def test_a_snapshot_reads_back_as_the_bank_it_holds_and_ranks_the_same(
    sessions: sessionmaker[Session], folder: Path
) -> None:
    aid, branch = _adventure(sessions)
    _add(sessions, aid, branch, 12, seed=1)
    bank = _saved(sessions, folder, aid)
    loaded, stamp = read(Snapshots(folder).path(aid, MODEL))
    same_bank(loaded, bank)
    assert (stamp.adventure_id, stamp.model, stamp.count) == (aid, MODEL, 12)
    # What is read back maps the file: never written to.
    assert not loaded.vectors.flags.writeable
    query = np.ones(DIMS, dtype=np.float32)
    mask = lineage_mask(loaded, [(branch, None)])
    got = rank(loaded, mask, query, query, ["bees", "toen"], 5)
    want = rank(bank, lineage_mask(bank, [(branch, None)]), query, query, ["bees", "toen"], 5)
    assert [(s.id, s.key, s.passages) for s in got.chosen] == [
        (s.id, s.key, s.passages) for s in want.chosen
    ]


def test_a_restart_reads_the_snapshot_and_only_the_rows_that_moved_since(
    engine: Engine, sessions: sessionmaker[Session], folder: Path
) -> None:
    aid, branch = _adventure(sessions)
    first = _add(sessions, aid, branch, 20, seed=2)
    _saved(sessions, folder, aid)
    # After the snapshot: new memories, one re-written, one forgotten, one re-embedded.
    _add(sessions, aid, branch, 3, seed=3)
    with session_scope(sessions) as session:
        memories = [session.get(Memory, i) for i in first[:3]]
        assert all(m is not None for m in memories)
        set_text(session, memories[0], "Mara sold the ledger.", None)  # type: ignore[arg-type]
        set_status(session, [memories[1]], "forgotten", None)  # type: ignore[list-item]
        set_vector(session, memories[2], _vector(np.random.default_rng(9)), MODEL, None)  # type: ignore[arg-type]
    statements = Statements(engine)
    restarted = _bank(sessions, BankCache(snapshots=Snapshots(folder)), aid)
    # No read of the whole adventure's keys: only those of the memories that moved.
    key_reads = statements.reads_of("memory_keys")
    assert key_reads and all(" IN " in s.upper() for s in key_reads)
    cold = _bank(sessions, BankCache(), aid)  # built from the database alone
    same_bank(_by_id(restarted), _by_id(cold))
    held = restarted.ids.tolist()
    # The re-written memory waits for its vector, the forgotten one is out.
    assert first[0] not in held and first[1] not in held and first[2] in held
    assert restarted.size == 20 + 3 - 2


def test_a_warm_bank_is_patched_and_equals_one_built_again(
    sessions: sessionmaker[Session],
) -> None:
    aid, branch = _adventure(sessions)
    first = _add(sessions, aid, branch, 15, seed=4)
    cache = BankCache()
    _bank(sessions, cache, aid)
    for round_ in range(3):
        _add(sessions, aid, branch, 2, seed=10 + round_)
        with session_scope(sessions) as session:
            memory = session.get(Memory, first[round_])
            assert memory is not None
            set_status(session, [memory], "forgotten", cache)
        warm = _bank(sessions, cache, aid)
        same_bank(_by_id(warm), _by_id(_bank(sessions, BankCache(), aid)))


# -- snapshots that are not used -----------------------------------------------------------


def test_a_snapshot_of_another_adventure_under_the_same_id_is_removed(
    sessions: sessionmaker[Session], folder: Path
) -> None:
    aid, branch = _adventure(sessions)
    _add(sessions, aid, branch, 6, seed=5)
    _saved(sessions, folder, aid)
    # The adventure went and another took its id (here: its creation time changes).
    with session_scope(sessions) as session:
        adventure = session.get(Adventure, aid)
        assert adventure is not None
        adventure.created_at = adventure.created_at.replace(year=2001)
    bank = _bank(sessions, BankCache(snapshots=Snapshots(folder), snapshot_at=10**6), aid)
    assert bank.size == 6
    assert not Snapshots(folder).path(aid, MODEL).exists()


def test_a_snapshot_ahead_of_the_database_is_removed(
    sessions: sessionmaker[Session], folder: Path
) -> None:
    """The database was put back from an older copy: the snapshot says more than it."""
    aid, branch = _adventure(sessions)
    _add(sessions, aid, branch, 6, seed=6)
    bank = _saved(sessions, folder, aid)
    path = Snapshots(folder).path(aid, MODEL)
    _, stamp = read(path)
    write(path, bank, Stamp(stamp.adventure_id, stamp.created, MODEL, stamp.revision + 50, 6))
    found = _bank(sessions, BankCache(snapshots=Snapshots(folder), snapshot_at=10**6), aid)
    same_bank(_by_id(found), _by_id(bank))
    assert not path.exists()


def _header(path: Path) -> tuple[dict[str, object], int]:
    data = path.read_bytes()
    (length,) = struct.unpack_from("<Q", data, len(MAGIC))
    return json.loads(data[len(MAGIC) + 8 : len(MAGIC) + 8 + length]), length


def _start(length: int) -> int:
    start = len(MAGIC) + 8 + length
    return start + -start % 64


def _rewrite_header(path: Path, header: dict[str, object], length: int) -> None:
    """The file with another header; the arrays (placed from the header's end) kept."""
    data = path.read_bytes()[_start(length) :]
    encoded = json.dumps(header, separators=(",", ":")).encode()
    head = MAGIC + struct.pack("<Q", len(encoded)) + encoded
    path.write_bytes(head + b"\0" * (_start(len(encoded)) - len(head)) + data)


def _truncate(path: Path) -> None:
    path.write_bytes(path.read_bytes()[:-100])


def _bad_magic(path: Path) -> None:
    path.write_bytes(b"NOTABANK" + path.read_bytes()[8:])


def _bad_dtype(path: Path) -> None:
    header, length = _header(path)
    header["arrays"]["ids"]["dtype"] = "|O"  # type: ignore[index]
    _rewrite_header(path, header, length)


def _offset_beyond(path: Path) -> None:
    header, length = _header(path)
    header["arrays"]["keys.vectors"]["offset"] = 10**9  # type: ignore[index]
    _rewrite_header(path, header, length)


def _shape_lies(path: Path) -> None:
    header, length = _header(path)
    header["arrays"]["ids"]["shape"] = [3]  # type: ignore[index]
    _rewrite_header(path, header, length)


def _owner_beyond(path: Path) -> None:
    header, length = _header(path)
    spec = header["arrays"]["keys.owner"]  # type: ignore[index]
    data = bytearray(path.read_bytes())
    struct.pack_into("<q", data, _start(length) + spec["offset"], 10**6)
    path.write_bytes(bytes(data))


def _other_version(path: Path) -> None:
    header, length = _header(path)
    header["version"] = 99
    _rewrite_header(path, header, length)


def _not_json(path: Path) -> None:
    header, length = _header(path)
    data = bytearray(path.read_bytes())
    data[len(MAGIC) + 8] = ord("{") + 1
    path.write_bytes(bytes(data))


def _arrays_not_an_object(path: Path) -> None:
    header, length = _header(path)
    header["arrays"] = []
    _rewrite_header(path, header, length)


def _revision_not_a_number(path: Path) -> None:
    header, length = _header(path)
    header["stamp"]["revision"] = "many"  # type: ignore[index]
    _rewrite_header(path, header, length)


@pytest.mark.parametrize(
    "spoil",
    [
        _truncate,
        _bad_magic,
        _bad_dtype,
        _offset_beyond,
        _shape_lies,
        _owner_beyond,
        _other_version,
        _not_json,
        _arrays_not_an_object,
        _revision_not_a_number,
    ],
)
def test_a_snapshot_that_does_not_hold_together_is_removed_and_the_bank_built(
    sessions: sessionmaker[Session], folder: Path, spoil: object
) -> None:
    aid, branch = _adventure(sessions)
    _add(sessions, aid, branch, 8, seed=7)
    bank = _saved(sessions, folder, aid)
    path = Snapshots(folder).path(aid, MODEL)
    spoil(path)  # type: ignore[operator]
    assert Snapshots(folder).load(aid, MODEL) is None
    assert not path.exists()
    path.parent.mkdir(parents=True, exist_ok=True)
    found = _bank(sessions, BankCache(snapshots=Snapshots(folder), snapshot_at=10**6), aid)
    same_bank(_by_id(found), _by_id(bank))


def test_a_folder_that_cannot_be_written_leaves_the_bank_as_it_is(
    sessions: sessionmaker[Session], tmp_path: Path
) -> None:
    aid, branch = _adventure(sessions)
    _add(sessions, aid, branch, 5, seed=8)
    blocked = tmp_path / "a-file"
    blocked.write_text("not a folder")
    cache = BankCache(snapshots=Snapshots(blocked / "banks"), snapshot_at=1)
    assert _bank(sessions, cache, aid).size == 5
    cache.wait_saved()
    assert blocked.read_text() == "not a folder"


def test_another_model_never_reads_the_snapshot(
    sessions: sessionmaker[Session], folder: Path
) -> None:
    aid, branch = _adventure(sessions)
    _add(sessions, aid, branch, 5, seed=9)
    _saved(sessions, folder, aid)
    with session_scope(sessions) as session:
        bank = BankCache(snapshots=Snapshots(folder)).bank(session, aid, "another-model")
    assert bank.size == 0


def test_each_database_has_its_own_snapshot_folder_under_the_data_folder(
    tmp_path: Path,
) -> None:
    settings = load_settings({"TALEKEEPER_DATA_DIR": str(tmp_path)})
    one = make_engine(database_url(tmp_path / "one.db"))
    two = make_engine(database_url(tmp_path / "two.db"))
    try:
        a, b = snapshot_folder(settings, one), snapshot_folder(settings, two)
    finally:
        one.dispose()
        two.dispose()
    assert a != b
    assert a.parent == b.parent == tmp_path / "banks"


def test_banks_that_moved_since_their_snapshot_are_written_at_shutdown(
    sessions: sessionmaker[Session], folder: Path
) -> None:
    aid, branch = _adventure(sessions)
    _add(sessions, aid, branch, 6, seed=11)
    cache = BankCache(snapshots=Snapshots(folder), snapshot_at=1, snapshot_after=1000)
    _bank(sessions, cache, aid)
    cache.wait_saved()
    path = Snapshots(folder).path(aid, MODEL)
    first = read(path)[1].revision
    _add(sessions, aid, branch, 2, seed=12)
    moved = _bank(sessions, cache, aid)
    cache.wait_saved()
    assert read(path)[1].revision == first  # 2 moved: under the 1,000 that write one
    cache.save_behind()
    cache.wait_saved()
    saved, stamp = read(path)
    assert stamp.revision > first and stamp.count == 8
    same_bank(saved, moved)
