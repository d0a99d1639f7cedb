"""Authority of a memory: is it established story, or a guess? (docs/memory.md §2)

The application decides, never the model. Invariants:

- ``classify`` returns ``Authority.HEURISTIC`` exactly when one of ``HEDGES``
  occurs in the text as a whole word or whole phrase, case-insensitively;
  otherwise ``Authority.ACCEPTED`` (``storage.vocabulary``). A heuristic memory
  must never read as established fact, so the list errs towards hedging.
- Matching is by whole words: "Maybelle" does not contain "maybe", "mighty" does
  not contain "might", "likelihood" does not contain "likely". Words inside a
  phrase may be separated by any whitespace.
- Bare "may", "thought", "claimed" and "appears" are not hedges ("May", "a
  figure appears in the doorway", "claimed the throne"); only their hedging
  phrases are ("may have", "thought to", "claims to", "appears to").
- "seemingly" is a hedge ("seemingly loyal" is a guess); bare "likelihood" is
  not, but "in all likelihood" is. The noun "suspect" still counts: a rare false
  alarm only makes a fact read as a guess, the safe direction.
"""

from __future__ import annotations

import re

from talekeeper.storage.vocabulary import Authority

HEDGES: tuple[str, ...] = (
    # appearance and seeming
    "seem",
    "seems",
    "seemed",
    "seeming",
    "seemingly",
    "appear to",
    "appears to",
    "appeared to",
    "appears that",
    "appeared that",
    "apparently",
    "evidently",
    "as if",
    "as though",
    # likelihood
    "perhaps",
    "maybe",
    "possibly",
    "possible",
    "probably",
    "probable",
    "likely",
    "unlikely",
    "in all likelihood",
    "presumably",
    "might",
    "may have",
    "may be",
    "could be",
    "could have",
    "must have",
    "unclear",
    "uncertain",
    "unconfirmed",
    # belief and suspicion
    "suspect",
    "suspects",
    "suspected",
    "believe",
    "believes",
    "believed",
    "think",
    "thinks",
    "thought to",
    "thought that",
    "guess",
    "guesses",
    "guessed",
    "assume",
    "assumes",
    "assumed",
    # hearsay and implication
    "implied",
    "implies",
    "imply",
    "hinted",
    "rumour",
    "rumours",
    "rumoured",
    "rumor",
    "rumors",
    "rumored",
    "reportedly",
    "supposedly",
    "allegedly",
    "purportedly",
    "ostensibly",
    "claims to",
    "claimed to",
    "claims that",
    "claimed that",
    "said to be",
    "according to",
)


def _phrase_pattern(phrase: str) -> str:
    return r"\s+".join(re.escape(part) for part in phrase.split())


# Longest phrases first, so "may have" is tried before any shorter overlap.
_HEDGE_RE = re.compile(
    r"(?<!\w)(?:"
    + "|".join(_phrase_pattern(h) for h in sorted(HEDGES, key=lambda h: (-len(h), h)))
    + r")(?!\w)",
    re.IGNORECASE,
)


def classify(text: str) -> Authority:
    """``Authority.HEURISTIC`` if the text hedges anywhere, else ``Authority.ACCEPTED``."""
    return Authority.HEURISTIC if _HEDGE_RE.search(text) else Authority.ACCEPTED
