"""Input limits, in one place, and the checks that state them.

Each limit is in characters (what a client can count before sending). A
value outside a limit is refused with a message that names the field and the
limit; nothing is cut silently.
"""

from __future__ import annotations

from typing import Any

from talekeeper.core.errors import InvalidInput

TITLE_MAX = 200  # fits a list row and a window title
ACTION_MAX = 8_000  # a long paragraph of the player's own prose; more belongs in a story card
NARRATION_MAX = 20_000  # edits of a narration: several screens of text
COMPONENT_MAX = 20_000  # AI Instructions, Plot Essentials, Author's Note, Story Summary
PERSONA_NAME_MAX = 120
PERSONA_PRONOUNS_MAX = 40
PERSONA_DESCRIPTION_MAX = 2_000
CARD_NAME_MAX = 120
CARD_KEYWORDS_MAX = 30  # keywords on one card
CARD_KEYWORD_MAX = 80  # characters in one keyword
CARD_ENTRY_MAX = 8_000
CARD_NOTES_MAX = 8_000
BRANCH_NAME_MAX = 120
SEARCH_MAX = 200
MAX_ID = 2**63 - 1  # the largest 64-bit integer: the largest id SQLite or PostgreSQL holds

# Work per adventure: counts a request, an import or a turn may bring an adventure to.
# Generous for play (a 10,000-action story is ~20,000 rows), small enough that no single
# request can make every later turn slow or exhaust the machine.
MAX_ACTIONS = 50_000  # action rows of one adventure, every state (takes, undone, removed)
MAX_BRANCHES = 2_000  # branches of one adventure, nested or not
MAX_CARDS = 5_000  # story cards of one adventure
MAX_MEMORIES = 100_000  # memories of one adventure, every status (bank_capacity's maximum)
MAX_WORLD_ENTITIES = 50_000  # the world's named things of one adventure
MAX_WORLD_EVENTS = 250_000  # world events of one adventure, every origin, on any branch

# Request bodies, in bytes, refused with 413 before they are read whole. An ordinary
# body holds at most a few text fields of COMPONENT_MAX characters (6 bytes each as a
# JSON escape); an adventure import holds a whole story with its Insights snapshots.
BODY_MAX = 2 * 1024 * 1024
IMPORT_BODY_MAX = 64 * 1024 * 1024


def quoted(value: Any, limit: int = 40) -> str:
    """A client's value as a message may repeat it: its repr, cut short."""
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def text_field(
    value: Any,
    field: str,
    limit: int,
    *,
    required: bool = False,
    hint: str = " Shorten it (long background belongs in story cards).",
) -> str:
    """``value`` stripped, or an error naming ``field`` and its limit."""
    if not isinstance(value, str):
        raise InvalidInput(f"'{field}' must be text; got {type(value).__name__}.")
    cleaned = value.strip()
    if required and not cleaned:
        raise InvalidInput(f"'{field}' must not be empty.")
    if len(cleaned) > limit:
        raise InvalidInput(
            f"'{field}' is {len(cleaned):,} characters; the limit is {limit:,}.{hint}"
        )
    return cleaned
