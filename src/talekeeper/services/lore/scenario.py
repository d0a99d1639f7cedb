"""A scenario draft from the parts a file gave: the checks every starting file shares.

Invariants:

- Title: collapsed whitespace; none in the file → the file's name without its
  extension, reported; over ``limits.TITLE_MAX`` → cut, reported.
- The opening, each alternate greeting and the plot components are kept whole.
  One over the limit an adventure holds is reported as refused, with its
  length, so the player shortens it in the preview; nothing is cut.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import PurePath

from talekeeper.services.common import limits
from talekeeper.services.lore.fields import storable
from talekeeper.services.lore.mapping import Source
from talekeeper.services.lore.model import CardDraft, ScenarioDraft

ALSO_A_SCENARIO = (
    "The file also holds a scenario (an opening and plot components); start a new adventure "
    "from it to use them."
)


@dataclass
class Parts:
    title: str = ""
    opening: str = ""
    alternate_greetings: list[str] = field(default_factory=list)
    ai_instructions: str = ""
    plot_essentials: str = ""
    authors_note: str = ""
    description: str = ""


def _title(parts: Parts, src: Source) -> str:
    title = " ".join(parts.title.split())
    if not title:
        title = " ".join(PurePath(storable(src.filename).replace("\\", "/")).stem.split())
        title = title or "Imported adventure"
        src.report.info(f"The file names no title; the adventure is called {title!r}")
    if len(title) > limits.TITLE_MAX:
        src.report.change(
            f"The title is {len(title):,} characters; cut to {limits.TITLE_MAX}", "title"
        )
        title = title[: limits.TITLE_MAX].rstrip()
    return title


def finish(parts: Parts, cards: tuple[CardDraft, ...], src: Source) -> ScenarioDraft:
    greetings = [g.strip() for g in parts.alternate_greetings if g.strip()]
    checks = [
        ("The opening", parts.opening.strip(), limits.NARRATION_MAX),
        ("AI Instructions", parts.ai_instructions.strip(), limits.COMPONENT_MAX),
        ("Plot Essentials", parts.plot_essentials.strip(), limits.COMPONENT_MAX),
        ("The Author's Note", parts.authors_note.strip(), limits.COMPONENT_MAX),
        *((f"Greeting {i}", g, limits.NARRATION_MAX) for i, g in enumerate(greetings, 1)),
    ]
    for label, value, limit in checks:
        if len(value) > limit:
            src.report.refuse(
                f"{label} is {len(value):,} characters; an adventure holds at most "
                f"{limit:,}. Shorten it in the preview."
            )
    if not parts.opening.strip():
        src.report.info("The file has no opening; write one in the preview.")
    return ScenarioDraft(
        format=src.format,
        title=_title(parts, src),
        opening=parts.opening.strip(),
        alternate_greetings=tuple(greetings),
        ai_instructions=parts.ai_instructions.strip(),
        plot_essentials=parts.plot_essentials.strip(),
        authors_note=parts.authors_note.strip(),
        description=parts.description.strip(),
        cards=cards,
        report=src.report.build(),
    )
