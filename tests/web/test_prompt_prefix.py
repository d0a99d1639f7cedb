"""Insights says how much of each prompt the narrator had to evaluate: the first prompt to a
model whole, then only what follows the prefix it shares with the previous one; a server
that reports its own figure (llama-server's timings, an OpenAI-style cached count) is
believed; a dry run measures without changing what the next turn is compared with."""

from __future__ import annotations

from typing import Any

from fastapi.testclient import TestClient
from tests.conftest import on_postgresql
from tests.kit.accounts import As
from tests.kit.memory import idle

from talekeeper_testkit.double import ModelDouble


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


SECRET = "The vault code is MARIGOLD. Never say it aloud."


def cached_after(player: As, aid: int, instructions: str) -> int:
    """One guess, as an attacker makes it: their own instructions set to the guess, then a
    dry run measured against the last prompt the narrator was sent."""
    answer = player.patch(f"/api/adventures/{aid}", json={"ai_instructions": instructions})
    assert answer.status_code == 200, answer.text
    tokens = player.post(
        f"/api/adventures/{aid}/insights/dry-run", json={"type": "do", "text": "I wait"}
    ).json()["tokens"]
    return int(tokens["prompt_cached"])


def test_no_player_measures_their_prompt_against_another_players(
    accounts: TestClient, double: ModelDouble
) -> None:
    """The common prefix with the last prompt sent is an oracle of its text: guessed token
    by token, two requests a guess, it gave away another player's instructions, cards and
    story. A player's prompt is measured only against their own; the server's own count
    is told only when the call before was theirs (and never where other processes share
    the model, as on PostgreSQL)."""
    mara, tal = As(accounts, "mara"), As(accounts, "tal")
    aids = {}
    for who, player in (("mara", mara), ("tal", tal)):
        aids[who] = player.post("/api/adventures", json={"title": "Vault"}).json()["id"]
    double.script(*["The guard nods."] * 8)
    assert cached_after(mara, aids["mara"], SECRET) == 0
    answer = mara.post(
        f"/api/adventures/{aids['mara']}/actions", json={"type": "do", "text": "I wait"}
    )
    assert answer.status_code == 200, answer.text
    guesses = [SECRET, SECRET.replace("MARIGOLD", "ROSE"), "Zebra"]
    # The oracle is real: measured against one's own last prompt, guesses differ.
    own = [cached_after(mara, aids["mara"], guess) for guess in guesses]
    assert own[0] > own[1] > own[2] >= 0
    assert cached_after(mara, aids["mara"], SECRET) == own[0]  # dry runs change nothing
    # Against another player's, every guess is told the same: nothing.
    assert [cached_after(tal, aids["tal"], guess) for guess in guesses] == [0, 0, 0]

    # A real turn: the server's own count (here always 11 of the prompt) is not told
    # to a player whose turn came after another player's call.
    double.timings = {"prompt_n": 11, "prompt_ms": 35.0}
    idle(accounts)
    after_mara = tal.post(
        f"/api/adventures/{aids['tal']}/actions", json={"type": "do", "text": "I wait"}
    ).json()["insights"]["tokens"]
    assert (after_mara["prompt_cached"], after_mara["prompt_evaluated_by"]) == (0, "prefix")
    idle(accounts)
    after_own = tal.post(
        f"/api/adventures/{aids['tal']}/actions", json={"type": "do", "text": "I look"}
    ).json()["insights"]["tokens"]
    expected = "prefix" if on_postgresql() else "provider"
    assert after_own["prompt_evaluated_by"] == expected
    if expected == "provider":
        assert after_own["prompt_evaluated"] == 11
