"""How actions read in the story and in the narrator's context.

- ``do``: "> You open the door." (a leading "I" or "you" is dropped, a leading "I'm" or
  "I was" leaves "are" or "were", the first letter lowered, a full stop added if the
  sentence has no ending; the player's "I", "my", "me", "mine" and "myself" become
  "you", "your", "you", "yours" and "yourself", "I am" and "I was" "you are" and "you
  were": "grab my rope and I run" is "> You grab your rope and you run.", "tell Mara I
  agree" "> You tell Mara you agree."; a numeral, as in "Henry I", reads as the pronoun
  too: players write "Mara I" far more often than a king's number);
- ``say``: '> You say "Hello there."' (quotes the player typed are not doubled);
- ``story``: the player's own prose, verbatim;
- ``narration``: the narrator's text, verbatim.

With a ``speaker`` (a shared adventure that several play: docs/sharing.md) a ``do`` or
``say`` reads in the third person, by the name of the character who wrote it: "> Mara
opens the door.", '> Mara says "Hello there."'. The first word of a ``do`` is taken for
its verb and agreed with the name ("open" → "opens", "carry" → "carries", "have" →
"has", "don't" → "doesn't"; a modal such as "can" stays); the player's "I", "my", "me",
"mine" and "myself" become "they", "their", "them", "theirs" and "themself", which fit
any character (the verb after "they" is the one "I" took: "I run" is "they run"). Words
in quotation marks within a ``do`` ('shout "follow me"') are someone's speech and keep
their person.

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
# A leading "I" in a contraction or with "am" or "was": the verb it leaves, in the second
# person (the third agrees it as any first word).
_LEADING_VERB = (
    (re.compile(r"^i(?:['’]m|\s+am)\s+", re.IGNORECASE), "are "),
    (re.compile(r"^i\s+was\s+", re.IGNORECASE), "were "),
    (re.compile(r"^i['’]ll\s+", re.IGNORECASE), "will "),
    (re.compile(r"^i['’]ve\s+", re.IGNORECASE), "have "),
    (re.compile(r"^i['’]d\s+", re.IGNORECASE), "would "),
)
_ENDS = (".", "!", "?", "…", '"', "'", "”", ")")


def _finish(text: str) -> str:
    return text if text.endswith(_ENDS) else text + "."


def render(type_: str, text: str, speaker: str | None = None) -> str:
    text = text.strip()
    if type_ == "do":
        body = text
        for leading, verb in _LEADING_VERB:
            body = leading.sub(verb, body)
        body = _LEADING_SUBJECT.sub("", body)
        if len(body) > 1 and body[0].isupper() and not body.split(" ", 1)[0].isupper():
            body = body[0].lower() + body[1:]
        if speaker:
            return f"> {speaker} {_finish(_third_person(body))}" if body else f"> {speaker} waits."
        return f"> You {_finish(_own(body, _SECOND))}" if body else "> You wait."
    if type_ == "say":
        spoken = text.strip().strip('"“”').strip()
        if spoken:
            spoken = spoken[0].upper() + spoken[1:]
        return f'> {speaker or "You"} {"says" if speaker else "say"} "{_finish(spoken)}"'
    return text


# Verbs whose third person is not the regular one, and modals, which have none.
_IRREGULAR = {
    "am": "is", "are": "is", "be": "is", "were": "was", "have": "has", "do": "does", "go": "goes"
}  # fmt: skip
_NEGATED = {"don't": "doesn't", "do not": "does not", "haven't": "hasn't", "aren't": "isn't"}
_MODALS = frozenset(
    {
        "can", "could", "will", "would", "shall", "should", "may", "might", "must",
        "can't", "couldn't", "won't", "wouldn't", "shouldn't", "mustn't", "cannot",
    }
)  # fmt: skip
# The player's first-person words, made the character's, in the second person and the third
# (the singular "they" takes the verb "I" took: "I run" is "they run", "I am" "they are").
_SECOND = {
    "my": "your", "me": "you", "mine": "yours", "myself": "yourself", "i": "you",
    "i am": "you are", "i was": "you were", "am i": "are you", "was i": "were you",
    "i'm": "you're", "i've": "you've", "i'd": "you'd", "i'll": "you'll",
}  # fmt: skip
_THIRD = {
    "my": "their", "me": "them", "mine": "theirs", "myself": "themself", "i": "they",
    "i am": "they are", "i was": "they were", "am i": "are they", "was i": "were they",
    "i'm": "they're", "i've": "they've", "i'd": "they'd", "i'll": "they'll",
}  # fmt: skip
# "I" in either case, not the "i" of "i.e."; a contraction with either apostrophe.
_FIRST_PERSON = re.compile(
    r"\b((?i:my|me|mine|myself)|[Ii] (?:am|was)|(?:am|was) [Ii]|[Ii]['’](?:m|ve|d|ll)|[Ii])"
    r"\b(?![.'’]\w)"
)
# Speech within a ``do``: a quotation in straight or curly marks, or one left open.
_SPEECH = re.compile(r"\"[^\"]*(?:\"|$)|“[^”]*(?:”|$)")


def _own(body: str, words: dict[str, str]) -> str:
    """``body`` with the player's "I", "my", "me", "mine" and "myself" outside quotation
    marks made ``words``' (a capital kept where the sentence starts: "My" → "Your")."""

    def swap(match: re.Match[str]) -> str:
        said = match.group(1)
        word = words[said.lower().replace("’", "'")]
        if "’" in said:
            word = word.replace("'", "’")
        capital = said[0].isupper() and (said[0] != "I" or _opens(match.string, match.start()))
        return word[0].upper() + word[1:] if capital else word

    out, at = [], 0
    for speech in _SPEECH.finditer(body):
        out.append(_FIRST_PERSON.sub(swap, body[at : speech.start()]) + speech.group())
        at = speech.end()
    return "".join(out) + _FIRST_PERSON.sub(swap, body[at:])


def _opens(text: str, at: int) -> bool:
    """Whether ``text[at]`` opens a sentence: nothing before it, or an end of sentence and
    space. Read backward over the space only, so a long action costs no more per word."""
    start = at
    while start > 0 and text[start - 1].isspace():
        start -= 1
    return at == 0 or (0 < start < at and text[start - 1] in ".!?…")


def _third_person(body: str) -> str:
    """``body`` (a ``do`` without its subject) with its first word agreed with a name, and
    the player's first-person words made the character's."""
    body = _own(body, _THIRD)
    for negated, agreed in _NEGATED.items():
        if body.lower().startswith(negated + " ") or body.lower() == negated:
            return agreed + body[len(negated) :]
    said, _, rest = body.partition(" ")
    verb = said.rstrip(".,;:!?…")  # "kneel." agrees as "kneel"
    stop = said[len(verb) :]
    word = verb.lower()
    if word in _MODALS or not word.isalpha():
        agreed = verb
    elif word in _IRREGULAR:
        agreed = _IRREGULAR[word]
    elif word.endswith(("s", "sh", "ch", "x", "z", "o")):
        agreed = verb + "es"
    elif len(word) > 1 and word.endswith("y") and word[-2] not in "aeiou":
        agreed = verb[:-1] + "ies"
    else:
        agreed = verb + "s"
    agreed += stop
    return f"{agreed} {rest}" if rest else agreed


def is_player(type_: str) -> bool:
    return type_ in PLAYER_TYPES
