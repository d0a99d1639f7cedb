"""The Scene, and the two texts of the retrieval query built from it.

Invariants:

- The Scene is the player's when they set it (``scene_by_player``); otherwise
  it is derived on every turn from the story cards the newest actions mention:
  the location card mentioned last and the character cards mentioned (at most
  ``SCENE_NAMES``), and the world's state, where it knows where the player is or who
  is present, takes their place (``services.world.scene``). A derived scene is never
  stored, so it cannot go stale.
- The retrieval query is two short texts (docs/memory.md §5): **input**, the
  player's own action this turn (its last ``INPUT_TOKENS``; empty on a
  continue), and **context**, the scene (summary, location, names of who is
  present, within ``SCENE_TOKENS``) then the end of the newest narration
  (``NARRATION_TOKENS``).
- An input that opens by addressing someone present ("Vegurk, how did I hurt my
  shoulder?") is queried without the address: the name says who is asked, not
  what about, and left in it lifts every memory of that person above the one
  that holds the answer. Only a name of the scene's cast (or one word of it),
  followed by a comma at the very start, is an address; the scene's names stay
  in the context text.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from talekeeper.core.errors import InvalidInput
from talekeeper.core.tokens import TokenCounter
from talekeeper.services.cards.rules import CARD_SCAN_ACTIONS, FiredCard, fired_in
from talekeeper.services.common import limits
from talekeeper.services.common.rendering import render
from talekeeper.services.story.tree import Story
from talekeeper.storage.models import Adventure

INPUT_TOKENS = 200  # the player's question, whole in nearly every case
SCENE_TOKENS = 60  # enough to resolve "her" and "it"; too short to drown the question
NARRATION_TOKENS = 120  # the last few sentences of the newest narration
SCENE_NAMES = 8  # who is present, at most
LOCATION_MAX = 200
SUMMARY_MAX = 300  # one line of what is happening
NAME_MAX = 120
PLAYER = "player"  # a ``Scene.source``: the player set it
CARDS = "story cards"  # a ``Scene.source``: derived from the newest actions' cards


@dataclass(frozen=True)
class Scene:
    location: str
    present: tuple[str, ...]
    summary: str
    by_player: bool

    @property
    def source(self) -> str:
        """Who describes the scene: the player, or the story cards."""
        return PLAYER if self.by_player else CARDS

    def view(self) -> dict[str, str | list[str]]:
        """The scene as JSON, for an answer that carries it inside a mapping."""
        return {
            "location": self.location,
            "present": list(self.present),
            "summary": self.summary,
            "source": self.source,
        }

    def text(self) -> str:
        parts = [self.summary.strip()]
        if self.location:
            parts.append(f"At {self.location}.")
        if self.present:
            parts.append("Present: " + ", ".join(self.present[:SCENE_NAMES]) + ".")
        return " ".join(p for p in parts if p)


def player_scene(adventure: Adventure) -> Scene | None:
    if not adventure.scene_by_player:
        return None
    present = tuple(str(name) for name in json.loads(adventure.scene_present or "[]"))
    return Scene(adventure.scene_location, present, adventure.scene_summary, True)


def derived_scene(fired: Sequence[FiredCard], recent_text: str) -> Scene:
    """The scene the cards of the newest actions describe: the location mentioned last,
    and the characters mentioned (in order of their last mention, newest first)."""
    lowered = recent_text.lower()

    def last_mention(card: FiredCard) -> int:
        return max((lowered.rfind(k.lower()) for k in card.card.keywords), default=-1)

    locations = [f for f in fired if f.card.type == "location"]
    characters = [f for f in fired if f.card.type == "character"]
    location = max(locations, key=last_mention).card.name if locations else ""
    people = sorted(characters, key=last_mention, reverse=True)[:SCENE_NAMES]
    return Scene(location, tuple(f.card.name for f in people), "", False)


def scene_for(adventure: Adventure, fired: Sequence[FiredCard], recent_text: str) -> Scene:
    return player_scene(adventure) or derived_scene(fired, recent_text)


def current_scene(story: Story) -> Scene:
    """The scene now: the player's, or the one the newest actions' cards describe."""
    if story.adventure.scene_by_player:
        return scene_for(story.adventure, [], "")
    rows = story.repo.newest_texts(story.lineage(), CARD_SCAN_ACTIONS)
    recent = "\n".join(render(r.type, r.text) for r in reversed(rows))
    return derived_scene(fired_in(story.session, story.adventure.id, recent, ""), recent)


# One to three words at the very start (after an opening quote), then a comma.
_ADDRESS = re.compile(
    r"""^\s*["“'‘]?(?P<name>[^\W\d_][\w'’.-]*(?:\s+[^\W\d_][\w'’.-]*){0,2})\s*,\s*"""
)


def without_address(text: str, names: Sequence[str]) -> str:
    """``text`` without a leading address to one of ``names`` (see the module docstring)."""
    match = _ADDRESS.match(text)
    if match is None:
        return text
    said = match.group("name").casefold()
    known = {n.casefold() for n in names}
    known |= {w.casefold() for n in names for w in n.split() if w[:1].isupper()}
    rest = text[match.end() :]
    return rest if said in known and rest.strip() else text


def query_texts(
    player_text: str, scene: Scene, narration: str, counter: TokenCounter
) -> tuple[str, str]:
    """(input, context) of the retrieval query."""
    asked = without_address(player_text.strip(), scene.present)
    query_input = counter.tail(asked, INPUT_TOKENS)
    scene_text = counter.head(scene.text(), SCENE_TOKENS)
    tail = counter.tail(narration.strip(), NARRATION_TOKENS)
    return query_input, "\n".join(p for p in (scene_text, tail) if p)


def set_scene(adventure: Adventure, body: Mapping[str, object]) -> None:
    """The player sets the scene (fields left out are empty); ``{"clear": true}``, alone,
    hands it back to the story cards."""
    fields = {k: v for k, v in body.items() if k != "clear"}
    clear = bool(body.get("clear"))
    if clear and fields:
        raise InvalidInput(
            "'clear' hands the scene back to the story cards; send it alone, "
            f"without {', '.join(repr(k) for k in sorted(fields))}."
        )
    if not clear and not fields:
        raise InvalidInput(
            "Send the scene ('location', 'present' as a list of names, 'summary'), "
            'or {"clear": true} to let the story cards describe it again.'
        )
    if clear:
        adventure.scene_by_player = False
        adventure.scene_location = ""
        adventure.scene_present = "[]"
        adventure.scene_summary = ""
        return
    present = body.get("present", [])
    if not isinstance(present, list) or len(present) > SCENE_NAMES:
        raise InvalidInput(f"'present' must be a list of at most {SCENE_NAMES} names.")
    names = [limits.text_field(n, "present", NAME_MAX, required=True) for n in present]
    adventure.scene_location = limits.text_field(body.get("location", ""), "location", LOCATION_MAX)
    adventure.scene_summary = limits.text_field(body.get("summary", ""), "summary", SUMMARY_MAX)
    adventure.scene_present = json.dumps(names)
    adventure.scene_by_player = True
