"""Local model servers: which of the usual loopback ports answer as an OpenAI-compatible
API, and with which models, so a newcomer can switch from the embedded placeholder to the
model they already run.

Invariants:

- Only ``127.0.0.1`` is asked, and only the ports of ``TALEKEEPER_DETECT_PORTS`` (by
  default the ports the usual servers listen on: Ollama 11434, LM Studio 1234, llama.cpp
  8080, KoboldCpp 5001, vLLM 8000). Talekeeper's own ports (``TALEKEEPER_PORT`` and the
  one the asking request came in on) are never asked, so it cannot list itself. No URL
  from a client reaches this module: there is nothing to point elsewhere.
- One request per port, ``GET /v1/models``, all at once, each with a short timeout, no
  redirect followed, no proxy from the environment, no key sent; an answer is read up to
  ``MAX_ANSWER`` bytes. Whatever a port answers is data, never an error: a port that is
  closed, slow, not HTTP, or answers anything but a list of models (nested past the
  parser's recursion, too) is simply not listed, and one port's failure, even one not
  foreseen, never hides the others' answers.
- A model id is kept only as a short printable string (``MAX_NAME``), once, at most
  ``MAX_MODELS`` per server; a server with no model left is not listed.
- ``kind`` says which server it is: from the ``owned_by`` its models give (llama.cpp,
  vLLM and KoboldCpp name themselves there), else the port's usual server, else
  ``openai-compatible``. The list is in the order of the ports asked.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from enum import StrEnum

import httpx

log = logging.getLogger(__name__)

HOST = "127.0.0.1"
TIMEOUT = 1.5  # seconds per port: a loopback server answers its model list in milliseconds
MAX_ANSWER = 512 * 1024  # bytes read of a model list; Ollama's with 100 models is ~15 KB
MAX_MODELS = 100
MAX_NAME = 200


class ServerKind(StrEnum):
    OLLAMA = "ollama"
    LM_STUDIO = "lm-studio"
    LLAMA_CPP = "llama.cpp"
    KOBOLDCPP = "koboldcpp"
    VLLM = "vllm"
    OTHER = "openai-compatible"


# Where each usual server listens out of the box, in the order they are listed.
USUAL_PORTS: dict[int, ServerKind] = {
    11434: ServerKind.OLLAMA,
    1234: ServerKind.LM_STUDIO,
    8080: ServerKind.LLAMA_CPP,
    5001: ServerKind.KOBOLDCPP,
    8000: ServerKind.VLLM,
}
DEFAULT_PORTS = ",".join(str(port) for port in USUAL_PORTS)
# ``owned_by`` values that name the server (its models' owner is otherwise a person or org).
OWNERS: dict[str, ServerKind] = {
    "llamacpp": ServerKind.LLAMA_CPP,
    "vllm": ServerKind.VLLM,
    "koboldcpp": ServerKind.KOBOLDCPP,
}


@dataclass(frozen=True)
class LocalServer:
    url: str  # the base URL to save as the endpoint, ending in /v1
    kind: ServerKind
    models: list[str]


def parse_ports(value: str) -> tuple[int, ...]:
    """A comma-separated list of ports, each once; ``ValueError`` names the first bad one."""
    ports: list[int] = []
    for entry in value.split(","):
        text = entry.strip()
        if not text:
            continue
        if not (text.isascii() and text.isdigit()) or not 1 <= int(text) <= 65535:
            raise ValueError(f"{text!r} is not a port (a whole number from 1 to 65535)")
        if int(text) not in ports:
            ports.append(int(text))
    if len(ports) > 16:
        raise ValueError(f"{len(ports)} ports are given; at most 16 are asked")
    return tuple(ports)


def _names(data: object) -> tuple[list[str], set[str]]:
    """The model ids of a ``/v1/models`` answer and the ``owned_by`` values beside them."""
    if not isinstance(data, dict) or not isinstance(data.get("data"), list):
        return [], set()
    names: list[str] = []
    owners: set[str] = set()
    for item in data["data"]:
        if not isinstance(item, dict):
            continue
        name = item.get("id")
        owner = item.get("owned_by")
        if isinstance(owner, str):
            owners.add(owner.lower())
        if (
            isinstance(name, str)
            and 0 < len(name) <= MAX_NAME
            and name.isprintable()
            and name == name.strip()
            and name not in names
        ):
            names.append(name)
        if len(names) == MAX_MODELS:
            break
    return names, owners


async def _read(client: httpx.AsyncClient, url: str) -> bytes | None:
    async with client.stream("GET", url, headers={"Accept": "application/json"}) as answer:
        if answer.status_code != 200:
            return None
        body = bytearray()
        async for chunk in answer.aiter_bytes():
            body += chunk
            if len(body) > MAX_ANSWER:
                return None
        return bytes(body)


async def _probe(client: httpx.AsyncClient, port: int) -> LocalServer | None:
    base = f"http://{HOST}:{port}/v1"
    try:
        body = await asyncio.wait_for(_read(client, base + "/models"), TIMEOUT)
    except (httpx.HTTPError, TimeoutError, OSError):
        return None
    if body is None:
        return None
    try:
        data = json.loads(body)
    except (ValueError, UnicodeDecodeError, RecursionError):  # the parser recurses per level
        return None
    names, owners = _names(data)
    if not names:
        return None
    kind = next((OWNERS[o] for o in sorted(owners) if o in OWNERS), None)
    return LocalServer(base, kind or USUAL_PORTS.get(port, ServerKind.OTHER), names)


async def detect(ports: Sequence[int], own_ports: Iterable[int | None] = ()) -> list[LocalServer]:
    """The servers that answer on ``ports`` of 127.0.0.1, ``own_ports`` left out."""
    skip = {p for p in own_ports if p is not None}
    asked = [p for p in ports if p not in skip]
    if not asked:
        return []
    timeout = httpx.Timeout(TIMEOUT)
    async with httpx.AsyncClient(timeout=timeout, follow_redirects=False, trust_env=False) as c:
        found = await asyncio.gather(*(_probe(c, port) for port in asked), return_exceptions=True)
    for port, outcome in zip(asked, found, strict=True):
        if isinstance(outcome, Exception):  # a stranger's answer we did not foresee
            log.warning("Port %s answered what could not be read: %r", port, outcome)
    return [server for server in found if isinstance(server, LocalServer)]
