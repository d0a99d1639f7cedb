"""What a world model is asked about one turn, and what of its answer is kept.

Invariants:

- Pure: text in, a request or facts out; no session, no model call.
- The request shows the model the state before the turn (where the player is, who is
  there, what they carry), the player's action and the reply, and asks for JSON only: an
  object with a list ``events``, each with a ``kind`` (``KINDS``), its names, and the one
  sentence it rests on (``evidence``), copied from the turn.
- The answer is garbage until shown otherwise: no JSON object, a list that is not one,
  an entry of the wrong shape, a kind not asked for, a name too long, roles a kind does
  not have or lacks (``events.ROLES``) each drop that entry, never the turn. At most
  ``MAX_FACTS`` entries are read.
- A fact is kept only when it is traceable: its evidence is a sentence of the reply or of
  the player's action (compared without case and runs of space), and every name it gives
  is said in that sentence (``names.mentions``); what a ``learned`` fact says was learned
  is in its words (``telling.told_about``). It belongs to the action whose text
  holds the sentence (the reply first).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from talekeeper.core.errors import InvalidInput
from talekeeper.providers.base import CompletionRequest
from talekeeper.services.memory.prompts import completion_request, mode_of
from talekeeper.services.world.events import GivenEvent, checked_value
from talekeeper.services.world.names import mentions
from talekeeper.services.world.telling import told_about
from talekeeper.storage.models.world import NAME_MAX
from talekeeper.storage.vocabulary import EventKind

KINDS = (
    EventKind.MOVED,
    EventKind.ARRIVED,
    EventKind.LEFT,
    EventKind.TOOK,
    EventKind.DROPPED,
    EventKind.GAVE,
    EventKind.USED_UP,
    EventKind.STATUS,
    EventKind.TIME,
    EventKind.LEARNED,
)
MAX_FACTS = 12  # entries of an answer read; a turn rarely states more than a few changes
EVIDENCE_MAX = 400  # characters of a sentence kept as evidence
REPLY_TOKENS = 400  # room for a dozen short entries
TEMPERATURE = 0.0  # the same turn, the same reading
CUE = "The JSON object:"

SYSTEM = (
    "You read one turn of an interactive story and list what it says changed in the "
    "world. Only changes the text states outright; nothing guessed, nothing planned, "
    "nothing someone only says or remembers (but someone being told or finding out "
    'something is "learned"). Answer with one JSON object and nothing else: '
    '{"events": [...]}. Each event is an object with "kind", "subject", "object", '
    '"value" and "evidence". Kinds: "moved" (the player goes to the place "object"; '
    'or the person "subject" goes there), "arrived" and "left" (the person "subject" '
    'comes to or leaves where the player is), "took", "dropped", "used_up" (the item '
    '"object"; "subject" null for the player, else who), "gave" (the player gives the item '
    '"object" to the person named in "value"), "status" (the person "subject" is now '
    '"value", such as "dead" or "wounded"), "time" (the time is now "value", such as "the '
    'next morning"), "learned" (the person "subject" is told or finds out what "value" '
    'says, in the sentence\'s words, such as "where the key is hidden"). Use null for a '
    'field a kind does not use. "evidence" is the one sentence of the turn that states the '
    "change, copied exactly."
)


@dataclass(frozen=True)
class Turn:
    """One turn as the model is shown it: the state before, the player's action (empty: the
    reply answers none), the reply."""

    location: str | None
    present: tuple[str, ...]
    carrying: tuple[str, ...]
    action: str
    reply: str


@dataclass(frozen=True)
class Fact:
    """A change the model stated and the turn bears out, on the reply or on the action."""

    kind: EventKind
    subject: str | None
    object: str | None
    value: str | None
    evidence: str
    on_reply: bool  # False: the sentence is the player's action's


def request(turn: Turn, *, model: str, mode: str) -> CompletionRequest:
    """The one extraction request of a turn."""
    listed = ", ".join
    user = (
        f"Where the player is: {turn.location or 'unknown'}\n"
        f"Who is there: {listed(turn.present) or 'no one'}\n"
        f"What the player carries: {listed(turn.carrying) or 'nothing'}\n\n"
        f"The player's action: {turn.action or '(none)'}\n\n"
        f"The story's reply: {turn.reply}"
    )
    return json_request(SYSTEM, user, model=model, mode=mode, max_tokens=REPLY_TOKENS)


def json_request(
    system: str, user: str, *, model: str, mode: str, max_tokens: int
) -> CompletionRequest:
    """A request to the world model for one JSON object (after ``CUE``), the same answer for
    the same text (``TEMPERATURE``): a turn's reading, a card's entry."""
    return completion_request(
        system,
        user,
        CUE,
        model=model,
        mode=mode_of(mode),
        max_tokens=max_tokens,
        temperature=TEMPERATURE,
        stop=(),
    )


_SPACE = re.compile(r"\s+")


def _plain(text: str) -> str:
    return _SPACE.sub(" ", text).strip().casefold()


def listed_in(answer: str, key: str) -> list[object]:
    """The list under ``key`` of a model's JSON answer, or none: the first ``{`` to the
    last ``}`` read as JSON (a model may write words around it). An answer nested past what
    the reader recurses through is garbage like any other, not a failure of the pass."""
    start, end = answer.find("{"), answer.rfind("}")
    if start < 0 or end <= start:
        return []
    try:
        found = json.loads(answer[start : end + 1])
    except (ValueError, RecursionError):
        return []
    value = found.get(key) if isinstance(found, dict) else None
    return list(value) if isinstance(value, list) else []


def _entries(answer: str) -> list[object]:
    """The answer's ``events`` list (the first ``MAX_FACTS``), or none."""
    return listed_in(answer, "events")[:MAX_FACTS]


def _text(entry: dict[str, object], field: str) -> str | None:
    value = entry.get(field)
    if isinstance(value, str) and value.strip() and len(value) <= NAME_MAX:
        return value.strip()
    return None


def _fact(entry: object, turn: Turn) -> Fact | None:
    if not isinstance(entry, dict):
        return None
    kind = entry.get("kind")
    evidence = entry.get("evidence")
    if kind not in set(KINDS) or not isinstance(evidence, str) or not evidence.strip():
        return None
    sentence = _plain(evidence)
    on_reply = sentence in _plain(turn.reply)
    if not on_reply and (not turn.action or sentence not in _plain(turn.action)):
        return None  # not a sentence of the turn
    given = GivenEvent(EventKind(str(kind)), _text(entry, "subject"), _text(entry, "object"))
    given = GivenEvent(given.kind, given.subject, given.object, _text(entry, "value"))
    try:
        value = checked_value(given)
    except InvalidInput:
        return None
    names = [n for n in (given.subject, given.object) if n is not None]
    if given.kind is EventKind.GAVE and value is not None:
        names.append(value)
    if not all(mentions(evidence, name) for name in names):
        return None  # it names someone or something its sentence does not
    if given.kind is EventKind.LEARNED and not told_about(value or "", [evidence]):
        return None  # what they learned is not what its sentence says
    return Fact(
        given.kind,
        given.subject,
        given.object,
        value,
        " ".join(evidence.split())[:EVIDENCE_MAX],
        on_reply,
    )


def facts(answer: str, turn: Turn) -> tuple[int, list[Fact]]:
    """How many entries the answer gave (up to ``MAX_FACTS``), and the facts kept."""
    entries = _entries(answer)
    kept = [f for f in (_fact(e, turn) for e in entries) if f is not None]
    return len(entries), kept
