"""The house's limits on the product's code, which keep it quick to change.

- No module in ``src/`` over ``MODULE_LINES`` lines (migrations aside: each is one
  frozen step of the schema), and no function over ``FUNCTION_LINES``.
- Loose JSON at the edges is counted: ``dict[str, Any]`` in ``services/`` and ``web/``
  (where typed results and response models belong) stays at or under
  ``LOOSE_DICTS``; free-form data that is checked before use is ``dict[str, object]``.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

pytestmark = pytest.mark.no_database

SRC = Path(__file__).resolve().parents[1] / "src"
MODULE_LINES = 450
FUNCTION_LINES = 60
LOOSE_DICTS = 40


def product_modules() -> list[Path]:
    return [p for p in sorted(SRC.rglob("*.py")) if "migrations" not in p.parts]


def test_no_module_is_over_the_limit() -> None:
    long = {
        str(p.relative_to(SRC)): n
        for p in product_modules()
        if (n := p.read_text(encoding="utf-8").count("\n")) > MODULE_LINES
    }
    assert long == {}, f"split these modules (at most {MODULE_LINES} lines)"


def long_functions(source: str) -> dict[str, int]:
    found = {}
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            assert node.end_lineno is not None
            length = node.end_lineno - node.lineno + 1
            if length > FUNCTION_LINES:
                found[f"{node.name} (line {node.lineno})"] = length
    return found


def test_no_function_is_over_the_limit() -> None:
    long = {
        f"{p.relative_to(SRC)}: {name}": n
        for p in product_modules()
        for name, n in long_functions(p.read_text(encoding="utf-8")).items()
    }
    assert long == {}, f"split these functions (at most {FUNCTION_LINES} lines)"


def test_the_function_check_measures_a_function_whole() -> None:
    body = "\n".join(f"    x{i} = {i}" for i in range(FUNCTION_LINES))
    assert long_functions(f"def short():\n{body[: body.rindex(chr(10))]}\n") == {}
    assert long_functions(f"async def tall():\n{body}\n") == {"tall (line 1)": FUNCTION_LINES + 1}


def test_loose_json_at_the_edges_stays_rare() -> None:
    roots = [SRC / "talekeeper" / "services", SRC / "talekeeper" / "web"]
    count = sum(
        p.read_text(encoding="utf-8").count("dict[str, Any]")
        for root in roots
        for p in root.rglob("*.py")
    )
    assert count <= LOOSE_DICTS, f"{count} dict[str, Any] in services/ and web/"
