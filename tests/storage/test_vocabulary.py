"""The stored vocabulary (``storage/vocabulary.py``): each enum's values are pinned, fit
their column, are the models' defaults and docstrings' words and the migrations' literals,
reach the database, JSON and the API as plain strings, and are spelled nowhere else.

Invariants checked:

- Every enum holds exactly the values pinned here, in this order (the export file lists
  them in this order in its error messages). Changing one is a migration, never an edit.
- Every value fits the ``String(n)`` of the column that stores it (PostgreSQL refuses a
  longer one), and the model's docstring names every value of its column's enum.
- The models' Python defaults and the partial unique index over active actions are the
  enum values; the migrations that spelled them as literals spelled the same text.
- A member written through the ORM or a Core insert is read back by plain SQL as its
  value (not its name), on SQLite and on PostgreSQL alike; ``json``, FastAPI's encoder
  and a response model turn a member into the plain string.
- No module under ``src/talekeeper`` but ``storage/vocabulary.py`` and the migrations
  assigns one of these values to a constant of its own (a module-level name, or a class
  attribute such as an enum member), nor a tuple or set of them; the few unrelated
  constants that share a spelling are allow-listed below, each with why.
"""

from __future__ import annotations

import ast
import json
from enum import StrEnum
from pathlib import Path
from typing import Any

import pytest
from fastapi.encoders import jsonable_encoder
from pydantic import BaseModel
from sqlalchemy import String, insert, select, text
from sqlalchemy.orm import Session, sessionmaker
from tests.conftest import database_url

from talekeeper.core.clock import utcnow
from talekeeper.services.memory import summary
from talekeeper.services.memory.bank import new_memory
from talekeeper.services.memory.base import NullMemory
from talekeeper.services.story import adventures
from talekeeper.storage import migrate, vocabulary
from talekeeper.storage.db import make_engine, make_session_factory, read_scope, session_scope
from talekeeper.storage.models import (
    Action,
    Adventure,
    AdventureMember,
    AiCall,
    BackgroundJob,
    Base,
    CardProposal,
    DerivedState,
    FeedEvent,
    LibrarySource,
    Memory,
    SummaryVersion,
    WorldEntity,
    WorldEvent,
)
from talekeeper.storage.repositories.jobs import JobRepository
from talekeeper.storage.repositories.memory import COVERING, LISTED
from talekeeper.storage.repositories.users import UserRepository
from talekeeper.storage.vocabulary import (
    ActionState,
    Authority,
    CallStatus,
    EntityKind,
    EventKind,
    EventOrigin,
    FeedKind,
    MemberRole,
    MemoryOrigin,
    MemoryStatus,
    PassState,
    ProposalKind,
    ProposalState,
    QuestState,
    SourceState,
    SummaryTrigger,
    TurnOrder,
    WitnessMode,
    WorkKind,
)

ROOT = Path(__file__).resolve().parents[2]
SRC = ROOT / "src" / "talekeeper"
MIGRATIONS = SRC / "storage" / "migrations" / "versions"

PINNED: dict[type[StrEnum], tuple[str, ...]] = {
    ActionState: ("active", "take", "undone", "removed"),
    MemoryStatus: ("active", "forgotten", "withdrawn", "deleted"),
    MemoryOrigin: ("auto", "user"),
    Authority: ("accepted_story", "heuristic"),
    SummaryTrigger: ("interval", "user"),
    PassState: ("idle", "running", "failed"),
    SourceState: ("indexing", "ready", "failed", "words_only"),
    CallStatus: ("ok", "error", "cancelled"),
    WorkKind: ("adventure", "library_source"),
    EntityKind: ("person", "place", "item", "faction", "quest"),
    EventKind: (
        "moved",
        "arrived",
        "left",
        "took",
        "dropped",
        "gave",
        "equipped",
        "used_up",
        "status",
        "relation",
        "time",
        "quest",
        "learned",
    ),
    EventOrigin: ("rules", "model", "player"),
    QuestState: ("opened", "advanced", "done", "failed"),
    WitnessMode: ("label", "strict", "off"),
    TurnOrder: ("free", "round_robin"),
    ProposalKind: ("new", "update"),
    ProposalState: ("open", "accepted", "dismissed"),
    MemberRole: ("host", "cohost", "player", "viewer"),
    FeedKind: (
        "append",
        "reply",
        "retry",
        "switch_take",
        "undo",
        "redo",
        "edit",
        "delete",
        "fork",
        "members",
    ),
}

# The column each enum is stored in.
COLUMNS: dict[type[StrEnum], tuple[type[Base], str]] = {
    ActionState: (Action, "state"),
    MemoryStatus: (Memory, "status"),
    MemoryOrigin: (Memory, "origin"),
    Authority: (Memory, "authority"),
    SummaryTrigger: (SummaryVersion, "trigger"),
    PassState: (DerivedState, "state"),
    SourceState: (LibrarySource, "state"),
    CallStatus: (AiCall, "status"),
    WorkKind: (BackgroundJob, "kind"),
    EntityKind: (WorldEntity, "kind"),
    EventKind: (WorldEvent, "kind"),
    EventOrigin: (WorldEvent, "origin"),
    QuestState: (WorldEvent, "value"),
    WitnessMode: (Adventure, "witness_mode"),
    TurnOrder: (Adventure, "turn_order"),
    ProposalKind: (CardProposal, "kind"),
    ProposalState: (CardProposal, "state"),
    MemberRole: (AdventureMember, "role"),
    FeedKind: (FeedEvent, "kind"),
}

VALUES = frozenset(value for values in PINNED.values() for value in values)

# Constants outside the vocabulary that share a spelling with one of its values: (module
# under src/talekeeper, the assigned name as the scan reports it) -> why it may.
ALLOWED = {
    # The health probe's answers ("ok"): an HTTP answer to a load balancer, never stored.
    ("web/routes/health.py", "ReadyState.OK"): "the readiness probe's answer",
    ("web/routes/health.py", "HealthState.OK"): "the health check's answer",
    # A turn's event ("error"): the name of a server-sent event, never stored.
    ("services/story/turn_events.py", "TurnEventKind.ERROR"): "a turn's failure event",
    # A story card's types (``story_cards.type``), two of which the world's entity kinds
    # share as words: a card of type "item" is not a world entity.
    ("services/cards/match.py", "CARD_TYPES"): "a story card's types",
    # A turn's events on its stream ("reply"): the name of a server-sent event of one
    # turn, never stored; the feed's kinds name the same change.
    ("services/story/turn_events.py", "TurnEventKind.REPLY"): "a turn's reply event",
    # Who wrote a memory, and who set the Scene, as the API shows it ("player"): never
    # stored as a world event's origin.
    ("services/memory/manage.py", "PLAYER"): "a memory's writer as shown",
    ("services/memory/scene.py", "PLAYER"): "the Scene's source as shown",
    # Nouns the world's rules never take for an item or a place ("take a left", "take
    # time"): words of the story, not stored event kinds.
    ("services/world/grammar.py", "NOT_THINGS"): "words that are no item or place",
    # Headings a narrator prints ("Status:", "Quest:", "Time:"): words of the story, never a
    # speaker, and no stored value.
    ("services/world/name_words.py", "HEADINGS"): "a narrator's headings",
    # TALEKEEPER_WORLD_MODEL's value for "no model": a setting, not an event's origin.
    ("settings.py", "RULES"): "the world model setting's value for the rules alone",
}


# -- the values ----------------------------------------------------------------------------


@pytest.mark.no_database
def test_every_enum_of_the_module_is_pinned_with_its_values_in_order() -> None:
    declared = {
        value
        for value in vars(vocabulary).values()
        if isinstance(value, type) and issubclass(value, StrEnum) and value is not StrEnum
    }
    assert declared == set(PINNED), "a new stored enum: pin its values and its column here"
    assert set(COLUMNS) == set(PINNED)
    for enum, values in PINNED.items():
        assert tuple(member.value for member in enum) == values, enum.__name__


@pytest.mark.no_database
def test_the_derived_groups_are_built_from_the_members() -> None:
    assert COVERING == (MemoryStatus.ACTIVE, MemoryStatus.FORGOTTEN, MemoryStatus.DELETED)
    assert LISTED == (MemoryStatus.ACTIVE, MemoryStatus.FORGOTTEN)
    assert all(isinstance(status, MemoryStatus) for status in (*COVERING, *LISTED))


@pytest.mark.no_database
@pytest.mark.parametrize("enum", list(COLUMNS), ids=lambda enum: enum.__name__)
def test_every_value_fits_its_column(enum: type[StrEnum]) -> None:
    model, name = COLUMNS[enum]
    column = model.__table__.c[name]
    assert isinstance(column.type, String) and column.type.length is not None
    longest = max(enum, key=len)
    assert len(longest) <= column.type.length, f"{longest!r} overflows {model.__name__}.{name}"


@pytest.mark.no_database
@pytest.mark.parametrize("enum", list(COLUMNS), ids=lambda enum: enum.__name__)
def test_the_models_docstring_names_every_value(enum: type[StrEnum]) -> None:
    model, name = COLUMNS[enum]
    doc = model.__doc__ or ""
    assert f"``{name}``" in doc, f"{model.__name__}'s docstring does not name ``{name}``"
    missing = [member.value for member in enum if f"``{member.value}``" not in doc]
    assert not missing, f"{model.__name__}'s docstring does not name {missing}"


@pytest.mark.no_database
def test_the_models_defaults_are_the_enum_values() -> None:
    defaults = {
        (Action, "state"): ActionState.ACTIVE,
        (Memory, "status"): MemoryStatus.ACTIVE,
        (Memory, "origin"): MemoryOrigin.AUTO,
        (DerivedState, "state"): PassState.IDLE,
    }
    for (model, name), member in defaults.items():
        default = model.__table__.c[name].default
        assert default is not None and default.arg == member, f"{model.__name__}.{name}"
        assert type(default.arg) is str  # the plain value, as a migration would spell it


@pytest.mark.no_database
def test_the_active_slot_index_and_the_migrations_spell_the_same_values() -> None:
    index = next(i for i in Action.__table__.indexes if i.name == "uq_actions_active_slot")
    for dialect in ("sqlite", "postgresql"):
        where = str(index.dialect_options[dialect]["where"])
        assert where == f"state = '{ActionState.ACTIVE.value}'"
    # History keeps its literals; they must be today's values.
    story = (MIGRATIONS / "0002_story_engine.py").read_text()
    assert f"\"state = '{ActionState.ACTIVE.value}'\"" in story
    memory = (MIGRATIONS / "0003_memory.py").read_text()
    assert f"a.story_summary, '{SummaryTrigger.USER.value}'" in memory


# -- what the members become --------------------------------------------------------------


@pytest.mark.no_database
def test_members_become_plain_strings_in_json_and_the_api() -> None:
    class Out(BaseModel):
        state: str

    for enum in PINNED:
        for member in enum:
            assert member == member.value and hash(member) == hash(member.value)
            assert f"{member}" == str(member) == member.value
            assert json.dumps({"v": member}) == json.dumps({"v": member.value})
            encoded = jsonable_encoder({"v": member})["v"]
            assert type(encoded) is str and encoded == member.value
            out = Out(state=member)
            assert type(out.state) is str and out.model_dump_json() == f'{{"state":"{member}"}}'


@pytest.fixture
def sessions(tmp_path: Path) -> sessionmaker[Session]:
    engine = make_engine(database_url(tmp_path / "tk.db"))
    migrate.upgrade(engine)
    return make_session_factory(engine)


def _raw(session: Session, sql: str, **params: Any) -> Any:
    value = session.execute(text(sql), params).scalar_one()
    assert type(value) is str  # what the database holds: plain text
    return value


def test_members_written_through_the_orm_and_core_are_stored_as_their_values(
    sessions: sessionmaker[Session],
) -> None:
    with session_scope(sessions) as session:
        uid = UserRepository(session).local_user().id
        story = adventures.create(session, uid, {"title": "T", "opening": "Once."}, NullMemory())
        aid, branch = story.adventure.id, story.adventure.current_branch_id
        action = session.scalars(select(Action).where(Action.adventure_id == aid)).first()
        assert action is not None
        action.state = ActionState.TAKE
        hedged = "Perhaps Toen keeps bees."
        memory = new_memory(
            session, aid, hedged, branch_id=branch, depth=-1, origin=MemoryOrigin.USER
        )
        memory.status = MemoryStatus.FORGOTTEN
        version = summary.edit_summary(session, story.adventure, "Toen keeps bees.")
        JobRepository(session).state(aid, "memory").state = PassState.RUNNING
        session.execute(
            insert(AiCall),
            [
                {
                    "user_id": uid,
                    "kind": "test",
                    "provider": "p",
                    "model": "m",
                    "started_at": utcnow(),
                    "duration_ms": 1.0,
                    "status": CallStatus.CANCELLED,
                }
            ],
        )
        action_id, memory_id, version_id = action.id, memory.id, version.id
    with read_scope(sessions) as session:
        one = "SELECT {} FROM {} WHERE {} = :key"
        assert _raw(session, one.format("state", "actions", "id"), key=action_id) == "take"
        for column, value in (("status", "forgotten"), ("origin", "user")):
            assert _raw(session, one.format(column, "memories", "id"), key=memory_id) == value
        authority = _raw(session, one.format("authority", "memories", "id"), key=memory_id)
        assert authority == "heuristic"
        trigger = _raw(session, one.format("trigger", "summary_versions", "id"), key=version_id)
        assert trigger == "user"
        state = "SELECT state FROM derived_states WHERE adventure_id = :key AND kind = 'memory'"
        assert _raw(session, state, key=aid) == "running"
        assert _raw(session, one.format("status", "ai_calls", "user_id"), key=uid) == "cancelled"


# -- spelled nowhere else ---------------------------------------------------------------


def _strings(node: ast.expr) -> list[str]:
    """The string constants a constant's value spells: itself, or a tuple, list or set of
    them (``frozenset({...})`` and ``tuple((...))`` too)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value]
    if isinstance(node, ast.Tuple | ast.List | ast.Set):
        return [s for element in node.elts for s in _strings(element)]
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id in ("frozenset", "set", "tuple")
        and len(node.args) == 1
    ):
        return _strings(node.args[0])
    return []


def stored_constants(source: str) -> list[tuple[str, list[str]]]:
    """(name, the vocabulary values it spells) of every module-level assignment, and every
    assignment in the body of a top-level class (an enum's members, a dataclass's
    defaults), whose value spells a vocabulary value."""
    tree = ast.parse(source)
    bodies: list[tuple[str, list[ast.stmt]]] = [("", tree.body)]
    bodies += [(f"{n.name}.", n.body) for n in tree.body if isinstance(n, ast.ClassDef)]
    found: list[tuple[str, list[str]]] = []
    for prefix, body in bodies:
        for statement in body:
            if isinstance(statement, ast.Assign):
                targets, value = statement.targets, statement.value
            elif isinstance(statement, ast.AnnAssign) and statement.value is not None:
                targets, value = [statement.target], statement.value
            else:
                continue
            spelled = [s for s in _strings(value) if s in VALUES]
            if spelled:
                name = ", ".join(ast.unparse(target) for target in targets)
                found.append((prefix + name, spelled))
    return found


@pytest.mark.no_database
def test_the_scan_finds_what_the_vocabulary_replaced() -> None:
    old = (
        'ACTIVE = "active"\nCOVERING = ("active", "forgotten", "deleted")\n'
        'TRIGGERS: tuple[str, ...] = ("interval", "user")\nROLE = "narrator"\n'
        'class PassState(StrEnum):\n    IDLE = "idle"\n'
        "class Record:\n    status: str = 'ok'\n"
        "def f() -> None:\n    local = 'active'\n"
    )
    assert stored_constants(old) == [
        ("ACTIVE", ["active"]),
        ("COVERING", ["active", "forgotten", "deleted"]),
        ("TRIGGERS", ["interval", "user"]),
        ("PassState.IDLE", ["idle"]),
        ("Record.status", ["ok"]),
    ]


@pytest.mark.no_database
def test_no_module_outside_the_vocabulary_spells_a_stored_value_as_a_constant() -> None:
    found: list[str] = []
    seen_allowed: set[tuple[str, str]] = set()
    for path in sorted(SRC.rglob("*.py")):
        module = path.relative_to(SRC).as_posix()
        if module == "storage/vocabulary.py" or module.startswith("storage/migrations/"):
            continue
        for name, spelled in stored_constants(path.read_text(encoding="utf-8")):
            if (module, name) in ALLOWED:
                seen_allowed.add((module, name))
            else:
                found.append(f"{module}: {name} = {spelled}")
    assert not found, "use the storage.vocabulary members instead:\n" + "\n".join(found)
    assert seen_allowed == set(ALLOWED), "an allow-listed constant is gone: drop its entry"
