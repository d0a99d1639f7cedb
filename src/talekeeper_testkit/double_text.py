"""What the model double answers from text alone, the same in every process: embeddings
(``embed_text``: sha256 feature hashing, unit length, texts that share words closer than
unrelated ones), summaries (``summarize``), and the shape of a recorded request.
"""

from __future__ import annotations

import hashlib
import math
import re
import socket
from dataclasses import dataclass
from typing import Any

DIMS = 64

_TOKEN = re.compile(r"[a-z0-9']+")

Json = dict[str, Any]


def _add_feature(feature: str, weight: float, vector: list[float]) -> None:
    digest = hashlib.sha256(feature.encode("utf-8")).digest()
    bucket = int.from_bytes(digest[:4], "big") % DIMS
    vector[bucket] += weight if digest[4] & 1 else -weight


def embed_text(text: str) -> list[float]:
    """Deterministic, L2-normalised vector of ``DIMS`` floats for ``text``.

    Feature hashing (sha256, stable across processes) of lowercased word tokens (weight 1.0) and
    their character trigrams (weight 0.5); the sign comes from another bit of the hash. Text with
    no tokens gets a fixed unit vector (bucket 0 = 1.0).
    """
    vector = [0.0] * DIMS
    for token in _TOKEN.findall(text.lower()):
        _add_feature("w:" + token, 1.0, vector)
        for i in range(len(token) - 2):
            _add_feature("t:" + token[i : i + 3], 0.5, vector)
    norm = math.sqrt(sum(v * v for v in vector))
    if norm == 0.0:
        return [1.0] + [0.0] * (DIMS - 1)
    return [v / norm for v in vector]


_SENTENCE = re.compile(r"[^.!?]+[.!?]")


def content_text(content: Any) -> str:
    """The text of a chat message's content: a string or a list of ``{"text": ...}`` parts."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return " ".join(p["text"] for p in content if isinstance(p, dict) and "text" in p)
    return ""


def summarize(body: Json) -> str:
    """The double's summary model: the first sentence of the passage (or of the new events)
    it was given, and for a Story Summary the current summary before it. Deterministic."""
    messages = body.get("messages")
    if isinstance(messages, list) and messages:
        prompt = content_text(messages[-1].get("content")) if isinstance(messages[-1], dict) else ""
    else:
        prompt = str(body.get("prompt", ""))
    sections = re.split(r"^\[([^\]\n]+)\]\s*$", prompt, flags=re.MULTILINE)
    named = {
        sections[i].strip().lower(): sections[i + 1].strip() for i in range(1, len(sections) - 1, 2)
    }
    passage = named.get("passage") or named.get("new events") or prompt
    first = _SENTENCE.findall(passage.replace("\n", " "))
    fact = (first[0] if first else passage[:200]).strip().lstrip("-> ").strip()
    current = next((v for k, v in named.items() if k.startswith("current summary")), "")
    if current and current != "(none yet)":
        return f"{current} {fact}"
    return fact


def closed_port_url() -> str:
    """A base URL ``http://127.0.0.1:PORT/v1`` for a port that nothing listens on."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"


@dataclass
class RecordedRequest:
    """One request as the double received it."""

    method: str
    path: str
    headers: dict[str, str]
    body: Json | None
