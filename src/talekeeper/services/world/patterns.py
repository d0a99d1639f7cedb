"""The rules' patterns for what the player (or someone named) does with items and places:
taking, dropping, giving, going (``rules`` reads each sentence with them).

Invariant: each pattern states its change in so many words; a pattern's groups are
``object`` (the item or place), ``value`` (gave: the recipient), ``subject`` (someone named;
none: the player) and ``giver`` (who hands the player a thing).
"""

from __future__ import annotations

import re

from talekeeper.services.world.grammar import CONTAINERS, END, MINE, YOU, named, np, you
from talekeeper.storage.vocabulary import EventKind

TAKE_VERBS = (
    r"pick up|picks up|grab|snatch|pocket|collect|lift|scoop up|snatch up|gather up|"
    r"help yourself to|help myself to"
)
MOVE_VERBS = (
    r"enter|walk into|step into|go into|head into|arrive (?:at|in)|reach|return to|go to|"
    r"walk to|head (?:over |back |down |up |out )?to|head for|make for|travel to|ride to|"
    r"climb (?:up )?to|make (?:your|my) way (?:to|into|down to|up to|back to|over to)|"
    r"find (?:yourself|myself) (?:in|at|inside)"
)
# Each pattern's groups: ``object`` (the item or place), ``value`` (gave: the recipient),
# ``subject`` (someone named; none: the player), ``giver`` (who hands the player a thing).
PATTERNS: list[tuple[EventKind, re.Pattern[str]]] = [
    (EventKind.TOOK, you(TAKE_VERBS, np("object") + END)),
    # "take" takes a road, a breath or a seat as readily as a key: only a whole clause
    # ("You take the key.", "You take the key from the hook") counts.
    (
        EventKind.TOOK,
        you(
            "take",
            np("object") + r"(?=\s*(?:[.!?;]|$|\s(?:from|off|out of|again|back|too|now)\b))",
        ),
    ),
    (
        EventKind.TOOK,
        you(
            r"tuck|slip|stuff|put|stow|place",
            np("object") + rf"\s+(?:into|in|inside|under|behind)\s+{MINE}\s+{CONTAINERS}\b",
        ),
    ),
    (
        EventKind.TOOK,
        re.compile(
            rf"(?:^|[\s\"“>]){MINE}\s+(?:fingers|hand|hands)\s+(?:close|closes|tighten|"
            r"tightens)\s+(?:around|on|over|about)\s+" + np("object") + END,
            re.IGNORECASE,
        ),
    ),
    (
        EventKind.TOOK,
        re.compile(
            r"^" + np("object") + r"\s+(?:is|are)\s+(?:now yours|yours now)\b", re.IGNORECASE
        ),
    ),
    (
        EventKind.TOOK,
        re.compile(
            named("giver")
            + r"\s+(?:hands|gives|passes|tosses|throws|lends)\s+you\s+"
            + np("object")
            + END
        ),
    ),
    (
        EventKind.TOOK,
        re.compile(named("giver") + r"\s+presses\s+" + np("object") + r"\s+into your hands?\b"),
    ),
    (
        EventKind.TOOK,
        re.compile(
            named("subject")
            + r"\s+(?:takes|snatches|grabs|picks up|pockets|accepts|borrows)\s+"
            + np("object")
            + END
        ),
    ),
    (
        EventKind.DROPPED,
        you(
            r"drop|discard|put down|set down|throw away|toss away|throw down|toss aside",
            np("object") + END,
        ),
    ),
    (
        EventKind.DROPPED,
        you(r"set|put|lay|throw|toss|cast|fling", np("object") + r"\s+(?:down|aside|away)\b"),
    ),
    (EventKind.DROPPED, you("leave", np("object") + r"\s+behind\b")),
    (EventKind.DROPPED, you("let", np("object") + r"\s+(?:fall|drop|slip)\b")),
    (EventKind.DROPPED, you("lay", np("object") + r"\s+(?:on|in|at|beside|by|upon)\b")),
    (EventKind.DROPPED, you("hang", np("object") + r"\s+back\b")),
    (
        EventKind.DROPPED,
        re.compile(
            r"^" + np("object") + r"\s+(?:slips|falls|tumbles|drops)\s+(?:from|out of)\s+"
            rf"{MINE}\s+(?:hand|hands|fingers|grip|grasp|{CONTAINERS[3:-1]})\b",
            re.IGNORECASE,
        ),
    ),
    (
        EventKind.GAVE,
        you(r"give|hand|pass", np("object") + r"\s+to\s+" + np("value") + END),
    ),
    (
        EventKind.GAVE,
        re.compile(
            YOU
            + r"(?i:give|hand|pass|toss|throw)\s+"
            + named("value")
            + r"\s+(?P<object>(?i:the|a|an|your|my|some)\s[^,;:.!?\"“”()]{1,80}?)"
            + END
        ),
    ),
    (
        EventKind.GAVE,
        re.compile(
            YOU
            + r"(?i:let)\s+"
            + named("value")
            + r"\s+(?i:keep|have|carry|hold)\s+"
            + np("object")
            + END
        ),
    ),
    (
        EventKind.GAVE,
        re.compile(
            YOU
            + r"(?i:press)\s+"
            + np("object")
            + r"\s+into\s+"
            + named("value")
            + r"['’]s\s+hands?\b"
        ),
    ),
    (EventKind.MOVED, you(MOVE_VERBS, np("object") + END)),
    (
        EventKind.MOVED,
        you(
            "follow",
            np("way") + r"\s+(?:down |up |back |over |out )?to\s+" + np("object") + END,
        ),
    ),
    (
        EventKind.MOVED,
        re.compile(
            r"\b(?:brings|bring|leads|lead) you (?:out |back |down |up )?(?:to|at|into)\s+"
            + np("object")
            + END,
            re.IGNORECASE,
        ),
    ),
    (  # "The mill is crowded when you get there."
        EventKind.MOVED,
        re.compile(
            r"^" + np("object") + r"\s+is\s+(?:\w+\s+){0,2}?(?:crowded|quiet|empty|dark|busy|"
            r"warm|cold|silent|deserted|full|packed)\s+when you (?:get|arrive) there\b",
            re.IGNORECASE,
        ),
    ),
]
