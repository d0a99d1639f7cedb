"""How actions read in the story and in the narrator's context.

- ``do``: "> You open the door." (a leading "I" or "you" is dropped, the first
  letter lowered, a full stop added if the sentence has no ending);
- ``say``: '> You say "Hello there."' (quotes the player typed are not doubled);
- ``story``: the player's own prose, verbatim;
- ``narration``: the narrator's text, verbatim.

Only the raw text is stored; rendering happens when the story is shown or
sent to a model, so a change here changes every story consistently.
"""

from __future__ import annotations

import re

PLAYER_TYPES = ("do", "say", "story")
TURN_TYPES = (*PLAYER_TYPES, "continue")
NARRATION = "narration"
ACTION_TYPES = (*PLAYER_TYPES, NARRATION)

_LEADING_SUBJECT = re.compile(r"^(?:i|you)\s+", re.IGNORECASE)
_ENDS = (".", "!", "?", "…", '"', "'", "”", ")")


def _finish(text: str) -> str:
    return text if text.endswith(_ENDS) else text + "."


def render(type_: str, text: str) -> str:
    text = text.strip()
    if type_ == "do":
        body = _LEADING_SUBJECT.sub("", text)
        if len(body) > 1 and body[0].isupper() and not body.split(" ", 1)[0].isupper():
            body = body[0].lower() + body[1:]
        return f"> You {_finish(body)}" if body else "> You wait."
    if type_ == "say":
        spoken = text.strip().strip('"“”').strip()
        if spoken:
            spoken = spoken[0].upper() + spoken[1:]
        return f'> You say "{_finish(spoken)}"'
    return text


def is_player(type_: str) -> bool:
    return type_ in PLAYER_TYPES
