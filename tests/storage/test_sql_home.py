"""SQL only under ``storage/``: the services keep the rules, the repositories under
``storage/repositories/`` keep the statements.

Invariants checked:

- No module under ``src/talekeeper/services/`` builds a SQL statement, unless it is on
  ``ALLOW_LIST`` (the modules that still do, until their statements move to a
  repository). Building one is a reference to one of sqlalchemy's statement or clause
  builders (``select``, ``insert``, ``update``, ``delete``, ``text``, ``func``,
  ``bindparam``, ``and_``, ...: ``SQL_BUILDERS``), imported by name or reached through
  the module (``sa.select``); a table's own ``insert()``/``update()``/``delete()``/
  ``select()`` (``Model.__table__.insert()``); a session's ``execute``/``scalars``/
  ``scalar`` on a statement built there (or on a SQL string); ``exec_driver_sql``; or a
  session's legacy ``query``. Importing ``Session`` or ``event`` builds nothing.
- Every allow-listed module still builds one: a module whose statements moved leaves
  the list in the same change, so the list only shrinks.
- The scan finds what it looks for: a hand-made module that builds a ``select`` is
  reported, and one that only calls a repository is not.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SERVICES = ROOT / "src" / "talekeeper" / "services"

# The modules under services/ that still build SQL of their own, relative to services/.
# This list only shrinks: move a module's statements into storage/repositories/, then
# drop its entry (the test fails while an entry names a module that no longer needs it).
# Never add one: a new statement belongs in a repository.
ALLOW_LIST: frozenset[str] = frozenset()

# sqlalchemy's builders of statements and of the clauses inside them.
SQL_BUILDERS = frozenset(
    {
        "select",
        "insert",
        "update",
        "delete",
        "text",
        "func",
        "bindparam",
        "literal",
        "literal_column",
        "column",
        "table",
        "values",
        "exists",
        "union",
        "union_all",
        "and_",
        "or_",
        "not_",
        "case",
        "cast",
        "tuple_",
        "aliased",
        "lateral",
    }
)
TABLE_BUILDERS = frozenset({"insert", "update", "delete", "select"})  # Model.__table__.x()
EXECUTES = frozenset({"execute", "scalars", "scalar"})  # a session's or a connection's


def _contains(node: ast.AST, names: set[str], modules: set[str]) -> bool:
    """Whether ``node`` refers to a builder (by its imported name or through the module)."""
    return any(_builder(child, names, modules) for child in ast.walk(node))


def _builder(node: ast.AST, names: set[str], modules: set[str]) -> str | None:
    """The builder ``node`` refers to, if it is one: ``select``, ``sa.select``,
    ``sqlalchemy.sql.expression.select``, ``Model.__table__.insert``."""
    if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and node.id in names:
        return node.id
    if isinstance(node, ast.Attribute):
        root: ast.expr = node.value
        while isinstance(root, ast.Attribute):
            root = root.value
        if isinstance(root, ast.Name) and root.id in modules and node.attr in SQL_BUILDERS:
            return ast.unparse(node)
        if (
            node.attr in TABLE_BUILDERS
            and isinstance(node.value, ast.Attribute)
            and node.value.attr == "__table__"
        ):
            return ast.unparse(node)
    return None


def sql_built(source: str) -> list[str]:
    """Where ``source`` (a module's text) builds or runs SQL of its own: one ``line: what``
    per finding, in line order."""
    tree = ast.parse(source)
    names: set[str] = set()  # the builders' local names
    modules: set[str] = set()  # local names of sqlalchemy and its submodules
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "sqlalchemy":
            for alias in node.names:
                if alias.name in SQL_BUILDERS:
                    names.add(alias.asname or alias.name)
                elif alias.name in ("sql", "expression", "future"):
                    modules.add(alias.asname or alias.name)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == "sqlalchemy":
                    modules.add(alias.asname or alias.name.split(".")[0])
    # Names a statement (or one built from it: ``query = base.where(...)``) is assigned to
    # anywhere in the module: what an execute may run. Grown until nothing new is found.
    assigns = [
        (node.targets if isinstance(node, ast.Assign) else [node.target], node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Assign | ast.AnnAssign) and node.value is not None
    ]
    built: set[str] = set()
    while True:
        more = {
            target.id
            for targets, value in assigns
            if _contains(value, names | built, modules)
            for target in targets
            if isinstance(target, ast.Name) and target.id not in built
        }
        if not more:
            break
        built |= more
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        what = _builder(node, names, modules)
        if what is not None:
            found.append((node.lineno, f"builds SQL with {what}"))
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
            continue
        method, receiver = node.func.attr, ast.unparse(node.func.value)
        if method == "exec_driver_sql":
            found.append((node.lineno, f"runs SQL text with {receiver}.exec_driver_sql"))
        elif method == "query" and receiver.split(".")[-1].endswith("session"):
            found.append((node.lineno, f"builds a query with {receiver}.query"))
        elif method in EXECUTES and node.args:
            statement = node.args[0]
            if (
                isinstance(statement, ast.Constant) and isinstance(statement.value, str)
            ) or _contains(statement, names | built, modules):
                shown = ast.unparse(statement)
                found.append((node.lineno, f"runs a statement built here: {method}({shown})"))
    return [f"{line}: {what}" for line, what in sorted(found)]


def modules_building_sql(root: Path) -> dict[str, list[str]]:
    """Every module under ``root`` that builds SQL (relative path -> its findings)."""
    out: dict[str, list[str]] = {}
    for path in sorted(root.rglob("*.py")):
        findings = sql_built(path.read_text(encoding="utf-8"))
        if findings:
            out[path.relative_to(root).as_posix()] = findings
    return out


def off_the_list(root: Path, allowed: frozenset[str]) -> list[str]:
    """The modules under ``root`` that build SQL but are not ``allowed``, with where."""
    return [
        f"{module} builds SQL; move its statements to a repository under "
        f"storage/repositories/:\n    " + "\n    ".join(findings)
        for module, findings in modules_building_sql(root).items()
        if module not in allowed
    ]


def needless_entries(root: Path, allowed: frozenset[str]) -> list[str]:
    """The entries of ``allowed`` whose module under ``root`` builds no SQL (or is gone)."""
    building = modules_building_sql(root)
    return sorted(allowed - set(building))


# -- the scan works --------------------------------------------------------------------

HAND_MADE = """
from sqlalchemy import func as f, select
from sqlalchemy.orm import Session

from talekeeper.storage.models import Memory


def newest(session: Session, adventure_id: int) -> Memory | None:
    query = select(Memory).where(Memory.adventure_id == adventure_id)
    return session.scalar(query.order_by(Memory.id.desc()).limit(1))


def count(session: Session) -> int:
    return int(session.scalar(f.count(Memory.id)) or 0)
"""

THROUGH_THE_MODULE = """
import sqlalchemy as sa


def touch(session, table):
    session.execute(table.__table__.update().values(stale=True))
    session.connection().exec_driver_sql("VACUUM")
    return session.execute(sa.text("SELECT 1")).scalar()
"""

CLEAN = """
from sqlalchemy import event
from sqlalchemy.orm import Session

from talekeeper.storage.repositories.memory import MemoryRepository


def newest(session: Session, adventure_id: int, text: str) -> int:
    select = MemoryRepository(session).memories(adventure_id, None)
    session.execute  # a repository's session, read as an attribute: not a statement
    return len(select) + len(text)
"""


@pytest.mark.no_database
def test_the_scan_finds_a_select_built_in_a_module() -> None:
    assert sql_built(HAND_MADE) == [
        "9: builds SQL with select",
        "10: runs a statement built here: scalar(query.order_by(Memory.id.desc()).limit(1))",
        "14: builds SQL with f",
        "14: runs a statement built here: scalar(f.count(Memory.id))",
    ]


@pytest.mark.no_database
def test_the_scan_finds_sql_built_through_the_module_or_a_table() -> None:
    assert sql_built(THROUGH_THE_MODULE) == [
        "6: builds SQL with table.__table__.update",
        "6: runs a statement built here: execute(table.__table__.update().values(stale=True))",
        "7: runs SQL text with session.connection().exec_driver_sql",
        "8: builds SQL with sa.text",
        "8: runs a statement built here: execute(sa.text('SELECT 1'))",
    ]


@pytest.mark.no_database
def test_a_module_that_calls_a_repository_builds_nothing() -> None:
    assert sql_built(CLEAN) == []


@pytest.mark.no_database
def test_a_hand_made_module_off_the_list_fails_the_rule(tmp_path: Path) -> None:
    (tmp_path / "rules").mkdir()
    (tmp_path / "rules" / "newest.py").write_text(HAND_MADE, encoding="utf-8")
    (tmp_path / "clean.py").write_text(CLEAN, encoding="utf-8")
    found = off_the_list(tmp_path, frozenset({"clean.py"}))
    assert len(found) == 1, found
    assert found[0].startswith("rules/newest.py builds SQL; move its statements")
    assert "9: builds SQL with select" in found[0]
    assert off_the_list(tmp_path, frozenset({"rules/newest.py"})) == []
    assert needless_entries(tmp_path, frozenset({"clean.py", "rules/newest.py"})) == ["clean.py"]


# -- the services ----------------------------------------------------------------------


@pytest.mark.no_database
def test_the_moved_modules_stay_off_the_list() -> None:
    assert not {m for m in ALLOW_LIST if m.startswith("exchange/")}
    assert "memory/changes.py" not in ALLOW_LIST


@pytest.mark.no_database
def test_only_allow_listed_services_build_sql() -> None:
    found = off_the_list(SERVICES, ALLOW_LIST)
    assert not found, "SQL belongs under storage/:\n" + "\n".join(found)


@pytest.mark.no_database
def test_every_allow_listed_service_still_builds_sql() -> None:
    """The list only shrinks: an entry goes in the change that moves its statements."""
    needless = needless_entries(SERVICES, ALLOW_LIST)
    assert not needless, f"these build no SQL now: drop them from ALLOW_LIST: {needless}"
