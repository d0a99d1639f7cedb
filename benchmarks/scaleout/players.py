"""Players: each an account of its own, signed in to one app process, playing its own
adventure turn after turn through ``POST /api/adventures/{id}/actions``.

A player behaves as a person at a browser would after a failure, which is what the faults
need: when a turn fails (an error answer, or the app process gone), the player looks at its
story. If the action was saved, it asks for a retry (``POST /retry``); if not, it sends the
action again; an app process that does not answer is left for the next one (the load
balancer's failover). Every attempt is kept with its outcome; a turn is done when an
attempt was answered 2xx, and its action text is then "acknowledged".

Turn texts are unique per player ("... (turn N)"), so the check of lost actions can find
each acknowledged one in the database.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field

import httpx
from benchmarks.concurrency.harness import ACTIONS
from benchmarks.scaleout.deploy import ADMIN, PASSWORD, Deployment

HTTP_TIMEOUT = 120.0
RETRY_PAUSE_S = 0.5
GIVE_UP_AFTER = 60  # attempts at one turn: a fault that never heals ends the player


@dataclass
class Attempt:
    at: float  # time.monotonic() when sent
    latency_ms: float
    status: int  # 0: no answer (the process went away, or the connection failed)
    retry: bool  # a POST /retry of a saved action, not a new send
    error: str = ""


@dataclass
class Player:
    name: str
    app: int  # the index of the app process it talks to now
    cookie: str = ""
    adventure: int = 0
    attempts: list[Attempt] = field(default_factory=list)
    acknowledged: list[str] = field(default_factory=list)
    gave_up: str = ""

    def headers(self) -> dict[str, str]:
        return {"Cookie": f"tk_session={self.cookie}"}


def sign_in(client: httpx.Client, url: str, name: str) -> str:
    answer = client.post(url + "/api/auth/login", json={"username": name, "password": PASSWORD})
    answer.raise_for_status()
    # Sent by hand from here on: kept in the client, the next sign-in would end it.
    client.cookies.clear()
    return str(answer.cookies["tk_session"])


def make_players(deployment: Deployment, count: int) -> list[Player]:
    """``count`` accounts made by the administrator, each signed in to an app process in
    turn, each with an adventure from the first shipped scenario."""
    urls = deployment.app_urls
    players = []
    with httpx.Client(timeout=HTTP_TIMEOUT) as client:
        admin = {"Cookie": f"tk_session={sign_in(client, urls[0], ADMIN)}"}
        scenario = client.get(urls[0] + "/api/scenarios", headers=admin).json()[0]["id"]
        for i in range(count):
            player = Player(f"player{i + 1}", app=i % len(urls))
            body = {"name": player.name, "password": PASSWORD}
            client.post(urls[0] + "/api/admin/users", json=body, headers=admin).raise_for_status()
            url = urls[player.app]
            player.cookie = sign_in(client, url, player.name)
            made = client.post(
                url + "/api/adventures", json={"scenario": scenario}, headers=player.headers()
            )
            made.raise_for_status()
            player.adventure = int(made.json()["id"])
            players.append(player)
    return players


def saved(client: httpx.Client, url: str, player: Player, text: str) -> bool | None:
    """Whether the story holds ``text`` as an action (None: could not look)."""
    try:
        answer = client.get(
            f"{url}/api/adventures/{player.adventure}/actions",
            params={"limit": 4},
            headers=player.headers(),
        )
    except httpx.TransportError:
        return None
    if not answer.is_success:
        return None
    return any(a["text"] == text for a in answer.json()["actions"])


def play(
    deployment: Deployment, player: Player, first: int, turns: int, start: threading.Barrier
) -> None:
    """Turns ``first+1 .. first+turns`` back to back."""
    with httpx.Client(timeout=HTTP_TIMEOUT) as client:
        start.wait()
        for i in range(first, first + turns):
            text = f"{ACTIONS[i % len(ACTIONS)]} (turn {i + 1})"
            if not _turn(deployment, client, player, text):
                return


def _turn(deployment: Deployment, client: httpx.Client, player: Player, text: str) -> bool:
    retry = False
    for _ in range(GIVE_UP_AFTER):
        apps = deployment.live("serve")
        if not apps:  # every app process is down: a person would wait and try again
            time.sleep(RETRY_PAUSE_S)
            continue
        url = apps[player.app % len(apps)].url
        began = time.monotonic()
        try:
            if retry:
                answer = client.post(
                    f"{url}/api/adventures/{player.adventure}/retry", headers=player.headers()
                )
            else:
                answer = client.post(
                    f"{url}/api/adventures/{player.adventure}/actions",
                    json={"type": "do", "text": text},
                    headers=player.headers(),
                )
            status, error = answer.status_code, "" if answer.is_success else answer.text[:300]
        except httpx.TransportError as exc:
            status, error = 0, f"{type(exc).__name__}: {exc}"
        player.attempts.append(
            Attempt(began, (time.monotonic() - began) * 1000, status, retry, error)
        )
        if 200 <= status < 300:
            player.acknowledged.append(text)
            return True
        if status == 0:
            player.app += 1  # the load balancer sends the next request elsewhere
        time.sleep(RETRY_PAUSE_S)
        apps = deployment.live("serve") or apps
        found = saved(client, apps[player.app % len(apps)].url, player, text)
        if found is not None:
            retry = found
    player.gave_up = f"{text}: {player.attempts[-1].status} {player.attempts[-1].error}"
    return False


def idle(deployment: Deployment, players: list[Player]) -> bool:
    """No background work pending or running for any player's adventure."""
    with httpx.Client(timeout=HTTP_TIMEOUT) as client:
        url = deployment.live("serve")[0].url
        for player in players:
            view = client.get(
                f"{url}/api/adventures/{player.adventure}/derived", headers=player.headers()
            )
            view.raise_for_status()
            derived = view.json()
            if derived["pending"]:
                return False
            if any(isinstance(v, dict) and v.get("state") == "running" for v in derived.values()):
                return False
    return True


def wait_idle(deployment: Deployment, players: list[Player], timeout: float = 600.0) -> float:
    """Seconds until the background work of every adventure was done."""
    began = time.monotonic()
    while not idle(deployment, players):
        if time.monotonic() - began > timeout:
            raise RuntimeError(f"background work still running after {timeout:.0f} s")
        time.sleep(0.25)
    return time.monotonic() - began
