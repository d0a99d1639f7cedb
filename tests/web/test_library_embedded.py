"""The knowledge library on the real embedded embedder (all-MiniLM-L6-v2): the vectors are
made in the background by the product's own default model, and a question that shares no
word with the passage that answers it still finds that passage, by meaning."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from tests.conftest import LOCAL, double_settings

from talekeeper.web.app import create_app
from talekeeper_testkit.double import ModelDouble

pytestmark = pytest.mark.model

ALMANAC = b"""# The Almanac of the Reach

## Weather

Storms arrive from the west in autumn and flatten the barley before harvest.

## Trades

The potters of Keld fire their clay in kilns dug into the hillside.

## Beasts

Wolves hunt the northern moors in packs of six or seven through the long winter.

## Food

Bakers of the river towns sell rye loaves sweetened with honey at the spring fair.
"""


@pytest.fixture
def embedded_client(tmp_path: Path, double: ModelDouble) -> Iterator[TestClient]:
    settings = double_settings(tmp_path, double, embedding_model="embedded")
    with TestClient(create_app(settings), base_url=LOCAL) as client:
        yield client


def test_a_question_in_other_words_finds_its_passage_by_meaning(
    embedded_client: TestClient,
) -> None:
    client = embedded_client
    made = client.post(
        "/api/library",
        params={"filename": "almanac.md"},
        content=ALMANAC,
        headers={"Content-Type": "application/octet-stream"},
    )
    assert made.status_code == 201, made.text
    source: dict[str, Any] = made.json()
    assert source["embedding_model"] == "embedded"
    deadline = time.monotonic() + 120
    while (got := client.get(f"/api/library/{source['id']}").json())["state"] == "indexing":
        assert time.monotonic() < deadline, got
        time.sleep(0.2)
    assert got["state"] == "ready" and got["embedded"] == got["passage_count"], got
    # No word of the question is in the answer (after stop words): meaning alone finds it.
    found = client.get(
        "/api/library/search", params={"q": "predators roaming together in groups"}
    ).json()
    best = found["hits"][0]
    assert best["heading_path"][-1] == "Beasts", found
    assert best["lexical_score"] == 0 and best["semantic_rank"] == 1
