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
    r"help yourself to|help myself to|unhook|take down|pull down|lift down|pluck|claim|"
    r"seize|loot|snag|nab|swipe|steal|pilfer|retrieve|stash|get hold of|lay hold of"
)
# Going somewhere: a verb of motion, a few words of manner or direction, then "to" or
# "into" (``_ON``: "You go on to the mill", "you stumble at last into the orchard").
_MOTION = (
    r"go|walk|run|hurry|rush|dash|stride|stroll|wander|stumble|sneak|creep|slip|limp|"
    r"march|trudge|stagger|wade|row|sail|ride|climb|head|come|move|step|hasten|race|jog|"
    r"amble|saunter|plod|press on|push on|make your way|make my way|travel|return|fly|"
    r"drive|crawl|cross|hike|ramble|troop|set off|set out"
)
_ON = (
    r"(?:\s+(?:on|over|back|down|up|out|in|inside|straight|quickly|slowly|home|along|"
    r"across|together|again|at last|finally|at once|on foot|the long way round|at a run)){0,3}"
)
MOVE_VERBS = (
    r"enter|walk into|step into|go into|head into|arrive (?:at|in)|reach|return to|go to|"
    r"walk to|head (?:over |back |down |up |out )?to|head for|make for|travel to|ride to|"
    r"climb (?:up )?to|make (?:your|my) way (?:to|into|down to|up to|back to|over to)|"
    r"find (?:yourself|myself) (?:in|at|inside)|visit|"
    rf"(?:{_MOTION}){_ON}\s+(?:to|into|in to)|cross (?:the threshold of|over to|into)|"
    r"take the (?:road|path|lane|track|ferry|boat|coach|cart|stairs|trail) (?:down |up )?to"
)
# Where the player's things may rest when set down.
_SURFACES = (
    r"(?:floor|ground|boards|table|wall|bench|crate|hearth|shelf|counter|grass|sand|"
    r"doorstep|step|bed|chair|stool|cobbles|flagstones|straw|ledge|sill|altar|barrel|post)"
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
            r"tuck|slip|stuff|put|stow|place|slide|shove|thrust|push",
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
            + r"\s+(?:(?:says|whispers|mutters|laughs|grins|nods|smiles),? and\s+)?"
            r"(?:takes|snatches|grabs|picks up|pockets|accepts|borrows)\s+" + np("object") + END
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
            + r"['’]s\s+(?:hands?|palm)\b"
        ),
    ),
    (
        EventKind.TOOK,
        re.compile(
            rf"(?:^|[\s\"“>])(?:(?:you|I)\s+)?(?:close|closes|closing)\s+{MINE}\s+(?:fingers|hand|"
            r"hands)\s+(?:around|on|over|about)\s+" + np("object") + END,
            re.IGNORECASE,
        ),
    ),
    (  # "The cloak belongs to you now.", "The map goes into your satchel."
        EventKind.TOOK,
        re.compile(
            r"^" + np("object") + r"\s+(?:belongs to you|belongs to me|(?:goes|disappears|"
            r"slides|is (?:stowed|tucked|packed|put)(?: away)?) (?:into|in|inside)\s+"
            rf"{MINE}\s+{CONTAINERS})\b",
            re.IGNORECASE,
        ),
    ),
    (  # "You are given the compass by Ida."
        EventKind.TOOK,
        re.compile(
            YOU
            + r"(?i:are|am)\s+(?i:given|handed|passed|lent)\s+"
            + np("object")
            + r"\s+(?i:by)\s+"
            + named("giver")
        ),
    ),
    (  # "Ida lets you have the compass.", "Hob puts the key in your hands."
        EventKind.TOOK,
        re.compile(
            named("giver")
            + r"\s+(?:lets you (?:have|keep|take)|puts|places|presses|lays)\s+"
            + np("object")
            + r"(?:\s+(?:in|into)\s+your\s+(?:hands?|palm|arms))?"
            + END
        ),
    ),
    (  # "The key passes from Hob's hands to yours."
        EventKind.TOOK,
        re.compile(
            r"^"
            + np("object")
            + r"\s+passes from\s+"
            + named("giver")
            + r"['’]s\s+(?:hands?|keeping) to (?:yours|you)\b",
            re.IGNORECASE,
        ),
    ),
    (  # someone else takes a thing: "Hob stoops and gathers up the key."
        EventKind.TOOK,
        re.compile(
            named("subject")
            + r"\s+(?:stoops and |reaches out and |bends and |quickly )?(?:gathers up|scoops up|"
            r"lifts|seizes|plucks|snatches up|relieves you of|pries|wrenches)\s+"
            + np("object")
            + END
        ),
    ),
    (  # "Hob has the key in hand.", "The key vanishes into Hob's bag."
        EventKind.TOOK,
        re.compile(
            named("subject") + r"\s+has\s+" + np("object") + r"\s+in (?:hand|his hand|"
            r"her hand|their hand|hand already)\b"
        ),
    ),
    (
        EventKind.TOOK,
        re.compile(
            r"^"
            + np("object")
            + r"\s+(?:vanishes|disappears|goes) into\s+"
            + named("subject")
            + rf"['’]s\s+{CONTAINERS}\b",
            re.IGNORECASE,
        ),
    ),
    (  # "The key is wrenched from your hands by Hob."
        EventKind.TOOK,
        re.compile(
            r"^" + np("object") + r"\s+is\s+(?:wrenched|snatched|taken|pulled|torn|plucked|"
            r"grabbed|stolen)\s+(?:from|out of|off)\s+(?:you|your\s+\w+)\s+by\s+"
            + named("subject"),
            re.IGNORECASE,
        ),
    ),
    (
        EventKind.DROPPED,
        you(
            r"lay down|abandon|get rid of|ditch|dump|let go of|part with",
            np("object") + END,
        ),
    ),
    (  # "You lower the lantern to the floor.", "You prop the staff against the wall."
        EventKind.DROPPED,
        re.compile(
            YOU
            + r"(?i:lower|set|lay|put|place|rest|lean|prop|stand|leave|deposit)\s+"
            + np("object")
            + r"\s+(?i:on|onto|upon|against|beside|by|under|in|to)\s+(?i:the|a)\s+"
            + rf"(?:\w+\s+)?(?i:{_SURFACES})\b"
        ),
    ),
    (  # "Setting the jar aside on a crate, you ...", "By the hearth you lay down the jar."
        EventKind.DROPPED,
        re.compile(
            r"(?:^|\s)(?:setting|putting|laying|tossing)\s+"
            + np("object")
            + r"\s+(?:down|aside|away)\b",
            re.IGNORECASE,
        ),
    ),
    (  # "The whistle clatters to the boards."
        EventKind.DROPPED,
        re.compile(
            r"^" + np("object") + r"\s+(?:clatters|falls|drops|tumbles|thuds|slides|rolls)\s+"
            rf"(?:to|onto|on|across)\s+the\s+{_SURFACES}\b",
            re.IGNORECASE,
        ),
    ),
    (
        EventKind.GAVE,
        you(
            r"entrust|lend|return|surrender|hand over|pass over|hand back|give back|slide|push|"
            r"toss|throw",
            np("object")
            + r"(?:\s+(?:across|over)\s+(?:the\s+)?\w+)?\s+to\s+"
            + named("value")
            + END,
        ),
    ),
    (  # "You present Hob with the key."
        EventKind.GAVE,
        re.compile(
            YOU + r"(?i:present)\s+" + named("value") + r"\s+(?i:with)\s+" + np("object") + END
        ),
    ),
    (  # "Hob is given the key."
        EventKind.GAVE,
        re.compile(
            named("value") + r"\s+is\s+(?:given|handed|passed|lent)\s+"
            r"(?P<object>(?i:the|a|an|your|my|some)\s[^,;:.!?\"“”()]{1,80}?)" + END
        ),
    ),
    (EventKind.MOVED, you(MOVE_VERBS, np("object") + END)),
    (  # "Your steps carry you down into the mill.", "My feet take me to Varn."
        EventKind.MOVED,
        re.compile(
            rf"(?:^|\s){MINE}\s+(?:feet|steps|legs|road|path|wandering)\s+(?:take|takes|carry|"
            r"carries|bring|brings|lead|leads)\s+(?:you|me)"
            + _ON
            + r"\s+(?:to|into)\s+"
            + np("object")
            + END,
            re.IGNORECASE,
        ),
    ),
    (  # "Gullreach is reached by the old coast road."
        EventKind.MOVED,
        re.compile(r"^" + np("object") + r"\s+is reached\b", re.IGNORECASE),
    ),
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
