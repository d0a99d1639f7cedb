"""Insights says how much of each prompt the narrator had to evaluate: the first prompt to a
model whole, then only what follows the prefix it shares with the previous one; a server
that reports its own figure (llama-server's timings, an OpenAI-style cached count) is
believed; a dry run measures without changing what the next turn is compared with."""

from __future__ import annotations

from typing import Any

from fastapi.testclient import TestClient
from tests.double.server import ModelDouble


def turn(client: TestClient, aid: int, text: str) -> dict[str, Any]:
    answer = client.post(f"/api/adventures/{aid}/actions", json={"type": "do", "text": text})
    assert answer.status_code == 200, answer.text
    insights: dict[str, Any] = answer.json()["insights"]
    return insights


def dry(client: TestClient, aid: int, text: str) -> dict[str, Any]:
    answer = client.post(
        f"/api/adventures/{aid}/insights/dry-run", json={"type": "do", "text": text}
    )
    assert answer.status_code == 200, answer.text
    tokens: dict[str, Any] = answer.json()["tokens"]
    return tokens


def test_each_turn_evaluates_only_what_follows_the_prefix_it_shares_with_the_last(
    client: TestClient, double: ModelDouble
) -> None:
    aid = client.post("/api/adventures", json={"title": "Gulls"}).json()["id"]
    double.script("The gulls wheel over the harbour.", "The tide turns.", "Rain.")
    first = turn(client, aid, "I walk to the harbour")["tokens"]
    assert first["prompt_cached"] == 0 and first["prompt_evaluated"] > 0
    assert first["prompt_evaluated_by"] == "prefix"
    ahead = dry(client, aid, "I watch the gulls")
    assert dry(client, aid, "I watch the gulls") == ahead  # a dry run changes nothing
    assert ahead["prompt_cached"] > 0
    second = turn(client, aid, "I watch the gulls")
    tokens = second["tokens"]
    # The second prompt starts as the first did: only the new story is evaluated.
    assert tokens["prompt_cached"] >= first["prompt_evaluated"] - 8
    assert 0 < tokens["prompt_evaluated"] < first["prompt_evaluated"]
    assert (tokens["prompt_cached"], tokens["prompt_evaluated"]) == (
        ahead["prompt_cached"],
        ahead["prompt_evaluated"],
    )
    assert second["timings"]["first_token_ms"] >= 0

    double.timings = {"prompt_n": 11, "prompt_ms": 35.0}  # as llama-server reports it
    reported = turn(client, aid, "I shelter under the awning")["tokens"]
    assert (reported["prompt_evaluated"], reported["prompt_evaluated_by"]) == (11, "provider")
    double.timings = None
    double.cached_tokens = 5  # as vLLM and hosted APIs report a cached prefix
    cached = turn(client, aid, "I wait for the rain to stop")["tokens"]
    assert cached["prompt_evaluated_by"] == "provider"
    assert cached["prompt_evaluated"] == cached["prompt"] - 5
