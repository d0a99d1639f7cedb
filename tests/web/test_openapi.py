"""The OpenAPI document describes every JSON answer of the app.

Every operation under ``/api`` names a schema for each success it can give (a 204 has
no body), so a script or an API tool reads what each route answers from
``/openapi.json`` alone. A schema that says only "an object" (a route returning
``dict[str, Any]``) describes nothing: the routes that still answer so are listed in
``UNTYPED``, which only shrinks; a new route that answers an untyped object fails here,
and so does a listed one that has become typed (take it off the list).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from talekeeper.settings import load_settings
from talekeeper.web.app import create_app

pytestmark = pytest.mark.no_database

# Routes whose answer is still a hand-built dict, to be given response models. The lore
# export is not among them: its file is another tool's format, declared as such.
UNTYPED = {
    "POST /api/settings/test-connection",
    "GET /api/ai-calls",
    "GET /api/derived",
    "GET /api/scenarios",
    "GET /api/scenarios/{scenario_id}",
    "POST /api/adventures",
    "GET /api/adventures/{adventure_id}",
    "PATCH /api/adventures/{adventure_id}",
    "DELETE /api/adventures/{adventure_id}",
    "GET /api/adventures/{adventure_id}/export",
    "DELETE /api/cards/{card_id}",
    "GET /api/adventures/{adventure_id}/actions",
    "POST /api/adventures/{adventure_id}/insights/dry-run",
    "GET /api/actions/{action_id}/insights",
    "POST /api/adventures/{adventure_id}/undo",
    "POST /api/adventures/{adventure_id}/redo",
    "GET /api/adventures/{adventure_id}/takes",
    "POST /api/adventures/{adventure_id}/switch-take",
    "PATCH /api/actions/{action_id}",
    "DELETE /api/actions/{action_id}",
    "POST /api/actions/{action_id}/fork",
    "POST /api/adventures/{adventure_id}/switch-branch",
    "GET /api/adventures/{adventure_id}/tree",
    "GET /api/adventures/{adventure_id}/memories",
    "POST /api/adventures/{adventure_id}/memories",
    "PATCH /api/memories/{memory_id}",
    "GET /api/memories/{memory_id}/uses",
    "GET /api/adventures/{adventure_id}/summary",
    "PUT /api/adventures/{adventure_id}/summary",
    "GET /api/adventures/{adventure_id}/derived",
    "GET /api/adventures/{adventure_id}/scene",
    "PUT /api/adventures/{adventure_id}/scene",
}


def says_nothing(schema: dict[str, Any]) -> bool:
    """Whether a schema is only "an object" (or a list of them): no named fields."""
    if not schema:
        return True
    if "$ref" in schema:
        return False
    if schema.get("type") == "array":
        return says_nothing(schema.get("items", {}))
    return (
        schema.get("type") == "object"
        and not schema.get("properties")
        and (schema.get("additionalProperties") is True or "additionalProperties" not in schema)
        and "description" not in schema
    )


def untyped(spec: dict[str, Any]) -> set[str]:
    """The operations with a 2xx answer whose body has no schema, or one that names no
    field."""
    found = set()
    for path, operations in spec["paths"].items():
        for method, operation in operations.items():
            for code, answer in operation.get("responses", {}).items():
                if not code.startswith("2") or code == "204":
                    continue
                bodies = answer.get("content", {}).values()
                if not bodies or any(says_nothing(body.get("schema", {})) for body in bodies):
                    found.add(f"{method.upper()} {path}")
    return found


def test_every_json_answer_has_a_schema_but_the_listed(tmp_path: Path) -> None:
    app = create_app(load_settings({"TALEKEEPER_DATA_DIR": str(tmp_path)}))
    spec = app.openapi()  # built from the routes alone: no database, no lifespan
    api = {path: ops for path, ops in spec["paths"].items() if path.startswith("/api/")}
    assert len(api) > 50, sorted(api)  # the whole API, not a part of it
    found = untyped({"paths": api})
    assert found - UNTYPED == set(), "give these routes a response model"
    assert UNTYPED - found == set(), "typed now: take these off UNTYPED"


def test_the_check_catches_an_answer_that_names_nothing() -> None:
    json = "application/json"
    spec = {
        "paths": {
            "/api/a": {"get": {"responses": {"200": {"content": {json: {}}}}}},
            "/api/b": {"delete": {"responses": {"204": {"description": "gone"}}}},
            "/api/c": {
                "get": {"responses": {"200": {"content": {json: {"schema": {"$ref": "#/x"}}}}}}
            },
            "/api/d": {
                "get": {
                    "responses": {
                        "200": {
                            "content": {
                                json: {
                                    "schema": {
                                        "type": "array",
                                        "items": {"type": "object", "additionalProperties": True},
                                    }
                                }
                            }
                        }
                    }
                }
            },
        }
    }
    assert untyped(spec) == {"GET /api/a", "GET /api/d"}
