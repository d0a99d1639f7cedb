"""What a turn tells its client: its events, and a failure as the player meets it; and
the turn in flight they are told of (``Pending``).

Invariants:

- A turn's events are ``queued`` (only while other turns are ahead of it), ``action``
  (once the player's action is saved), ``chunk``..., then exactly one of ``reply`` or
  ``error``.
- An error says whether the player's action is saved, whether retrying makes sense, and
  carries a complete reply that could not be saved (``reply_text``); an unexpected
  failure is logged with its traceback, and the player's message never shows it.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from talekeeper.core.errors import DatabaseBusy, InvalidInput, ProviderError, TalekeeperError
from talekeeper.services.common import limits
from talekeeper.services.common.rendering import TURN_TYPES
from talekeeper.services.prompt.inputs import ContextInputs
from talekeeper.services.story.view import ActionView, Author

log = logging.getLogger(__name__)


class TurnEventKind(StrEnum):
    """What a turn's event says; the web edge names its server-sent events so."""

    QUEUED = "queued"  # {"ahead": n}: other turns of the adventure go first
    ACTION = "action"  # the saved player action
    CHUNK = "chunk"  # a piece of the reply as it is generated
    REPLY = "reply"  # the saved reply, with its Insights
    ERROR = "error"  # the one failure, with what was saved


@dataclass
class Pending:
    """A turn whose player action (if any) is saved and whose reply is still to come."""

    adventure_id: int
    user_id: int
    action: ActionView | None = None  # the saved player action; None for continue/retry
    retry: bool = False
    inputs: ContextInputs | None = None  # read in begin's read unit (continue, retry) or in plan
    read_ms: float = 0.0
    ticket: int | None = None  # its place in the adventure's turns (``queue``)
    holding: bool = False  # the ticket holds the turn (no other turn is ahead of it)
    unsaved: tuple[str, str, Author | None] | None = None  # an action waiting for its turn
    shared: bool = False  # others follow the adventure: its reply so far is written for them
    asker: int | None = None  # who sent it (the host in single play)


@dataclass
class TurnEvent:
    kind: TurnEventKind
    data: dict[str, Any] = field(default_factory=dict)
    error: TalekeeperError | None = None


def player_text(type_: str, text: str, *, required: bool) -> str:
    """The checked text of a turn of ``type_`` ("" for a continue, which carries none)."""
    if type_ not in TURN_TYPES:
        raise InvalidInput(
            f"'type' must be one of {', '.join(TURN_TYPES)}; got {limits.quoted(type_)}."
        )
    if type_ == "continue":
        if required and text.strip():
            raise InvalidInput("A 'continue' carries no text: send an empty 'text'.")
        return ""
    return limits.text_field(text, "text", limits.ACTION_MAX, required=required)


def as_ours(exc: Exception, pending: Pending, written: str) -> TalekeeperError:
    """A failure as the error the player meets; an unexpected one is logged with its
    traceback (the player's message never shows it)."""
    if isinstance(exc, DatabaseBusy) and written:
        return DatabaseBusy(
            "The database stayed busy with other work for too long, so the reply could not "
            "be saved."
        )
    if isinstance(exc, TalekeeperError):
        return exc
    log.exception("turn on adventure %s failed", pending.adventure_id)
    return TalekeeperError(
        "Something went wrong on the server while the reply was being written; the log "
        "has the details."
    )


def failure(pending: Pending, exc: TalekeeperError, written: str = "") -> dict[str, Any]:
    saved = pending.action is not None
    message = exc.message if exc.message.endswith((".", "!", "?")) else exc.message + "."
    if written:
        message += " Its text comes with this message: copy it if you want to keep it."
    if saved:
        note = " Your action is saved: retry to generate the reply."
    elif pending.retry:
        later = " when the model is back" if isinstance(exc, ProviderError) else ""
        note = f" The story is unchanged: retry again{later}."
    else:
        note = " Nothing was changed."
    out: dict[str, Any] = {
        "error": {"code": exc.code, "message": message + note},
        "action": pending.action,
        "action_saved": saved,
        "retryable": isinstance(exc, ProviderError | DatabaseBusy) or saved,
    }
    if written:
        out["reply_text"] = written[: limits.NARRATION_MAX]
    return out
