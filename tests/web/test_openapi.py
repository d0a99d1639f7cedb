"""The OpenAPI document describes every JSON answer of the app.

Every operation under ``/api`` names a schema for each success it can give (a 204 has
no body), so a script or an API tool reads what each route answers from
``/openapi.json`` alone. A schema that says only "an object" (a route returning
``dict[str, Any]``) describes nothing, so a route that answers so fails here. The lore
export is no exception: its file is another tool's format, declared as such.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from talekeeper.settings import load_settings
from talekeeper.web.app import create_app

pytestmark = pytest.mark.no_database


# The keys by which a schema says what a value is; one with none of them describes nothing.
SHAPES = frozenset({"type", "properties", "anyOf", "oneOf", "allOf", "items", "enum", "const"})


def says_nothing(schema: dict[str, Any], components: dict[str, Any] | None = None) -> bool:
    """Whether a schema is only "an object" (or a list of them): no named fields. A
    reference is followed into ``components`` (when given), and so is every reference
    among the fields it names: a model that describes itself as a bare object (a custom
    serializer hides its fields from the document) says nothing wherever it is nested."""
    if not schema:
        return True
    if "$ref" in schema:
        if components is None:
            return False
        target = components.get(schema["$ref"].rsplit("/", 1)[-1], {})
        return says_nothing(target, components) or any(
            says_nothing(ref, components) for ref in _references(target.get("properties", {}))
        )
    if schema.get("type") == "array":
        return says_nothing(schema.get("items", {}), components)
    if not SHAPES & schema.keys():  # a title alone (a route returning Any) names nothing
        return True
    return (
        schema.get("type") == "object"
        and not schema.get("properties")
        and (schema.get("additionalProperties") is True or "additionalProperties" not in schema)
        and "description" not in schema
    )


def _references(value: Any) -> list[dict[str, Any]]:
    """Every ``{"$ref": ...}`` inside a schema's fields (through lists and unions)."""
    if isinstance(value, dict):
        if "$ref" in value:
            return [value]
        return [ref for item in value.values() for ref in _references(item)]
    if isinstance(value, list):
        return [ref for item in value for ref in _references(item)]
    return []


def untyped(spec: dict[str, Any]) -> set[str]:
    """The operations with a 2xx answer whose body has no schema, or one that names no
    field."""
    components = spec.get("components", {}).get("schemas")
    found = set()
    for path, operations in spec["paths"].items():
        for method, operation in operations.items():
            for code, answer in operation.get("responses", {}).items():
                if not code.startswith("2") or code == "204":
                    continue
                bodies = answer.get("content", {}).values()
                if not bodies or any(
                    says_nothing(body.get("schema", {}), components) for body in bodies
                ):
                    found.add(f"{method.upper()} {path}")
    return found


def test_every_json_answer_has_a_schema(tmp_path: Path) -> None:
    app = create_app(load_settings({"TALEKEEPER_DATA_DIR": str(tmp_path)}))
    spec = app.openapi()  # built from the routes alone: no database, no lifespan
    api = {path: ops for path, ops in spec["paths"].items() if path.startswith("/api/")}
    assert len(api) > 50, sorted(api)  # the whole API, not a part of it
    described = {"paths": api, "components": spec.get("components", {})}
    assert untyped(described) == set(), "give these routes a response model"


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
    titled = {"get": {"responses": {"200": {"content": {json: {"schema": {"title": "Any"}}}}}}}
    assert untyped({"paths": {"/api/e": titled}}) == {"GET /api/e"}


def test_the_check_follows_references_into_the_models() -> None:
    def answer(ref: str) -> dict[str, Any]:
        schema = {"$ref": f"#/components/schemas/{ref}"}
        return {
            "get": {"responses": {"200": {"content": {"application/json": {"schema": schema}}}}}
        }

    bare = {"type": "object", "additionalProperties": True}  # a model that hides its fields
    named = {"type": "object", "properties": {"id": {"type": "integer"}}}
    holder = {
        "type": "object",
        "properties": {
            "head": {"anyOf": [{"$ref": "#/components/schemas/Bare"}, {"type": "null"}]}
        },
    }
    spec = {
        "paths": {"/api/a": answer("Bare"), "/api/b": answer("Named"), "/api/c": answer("Holder")},
        "components": {"schemas": {"Bare": bare, "Named": named, "Holder": holder}},
    }
    assert untyped(spec) == {"GET /api/a", "GET /api/c"}
