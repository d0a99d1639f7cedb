"""The OpenAPI document describes every JSON answer of the app.

Every operation under ``/api`` names a schema for each success it can give (a 204 has
no body), so a script or an API tool reads what each route answers from
``/openapi.json`` alone; a route added without a response model fails here.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from talekeeper.settings import load_settings
from talekeeper.web.app import create_app

pytestmark = pytest.mark.no_database


def undescribed(spec: dict[str, Any]) -> list[str]:
    """The operations with a 2xx answer whose body has no schema."""
    missing = []
    for path, operations in spec["paths"].items():
        for method, operation in operations.items():
            for code, answer in operation.get("responses", {}).items():
                if not code.startswith("2") or code == "204":
                    continue
                bodies = answer.get("content", {}).values()
                if not bodies or not all(body.get("schema") for body in bodies):
                    missing.append(f"{method.upper()} {path} ({code})")
    return missing


def test_every_json_answer_has_a_schema(tmp_path: Path) -> None:
    app = create_app(load_settings({"TALEKEEPER_DATA_DIR": str(tmp_path)}))
    spec = app.openapi()  # built from the routes alone: no database, no lifespan
    api = {path: ops for path, ops in spec["paths"].items() if path.startswith("/api/")}
    assert len(api) > 50, sorted(api)  # the whole API, not a part of it
    assert undescribed({"paths": api}) == []


def test_the_check_catches_an_answer_without_a_schema() -> None:
    spec = {
        "paths": {
            "/api/a": {"get": {"responses": {"200": {"content": {"application/json": {}}}}}},
            "/api/b": {"delete": {"responses": {"204": {"description": "gone"}}}},
            "/api/c": {
                "get": {
                    "responses": {
                        "200": {"content": {"application/json": {"schema": {"type": "object"}}}}
                    }
                }
            },
        }
    }
    assert undescribed(spec) == ["GET /api/a (200)"]
