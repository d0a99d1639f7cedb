"""A built context and its report: what ``context.build_context`` makes, and nothing
changes afterwards (the request and the Insights snapshot are both read from it).

Invariants:

- Chat and completion mode are built from one list of parts (``BuiltContext.parts``), so
  both say the same thing in the same order.
- In chat mode the messages alternate, the first after the system message from the user
  (``STORY_START`` stands in before a story that opens with narration); a section placed
  in the history speaks as the user and joins the player's message beside it.
- The report records every section's tokens and why it is there, and what was dropped
  or cut for budget.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from talekeeper.services.endpoints.models import ContextLayout
from talekeeper.services.prompt.floating import Placement
from talekeeper.services.prompt.sections import SEPARATOR, HistoryEntry

STORY_START = "[Story start]"  # the user turn placed before a story that opens with narration


@dataclass(frozen=True)
class SectionReport:
    name: str
    tokens: int
    text: str
    reason: str = ""
    cut: bool = False
    budget: int | None = None  # the section's own budget, when it has one (``budgets``)


@dataclass(frozen=True)
class ContextReport:
    budget: int
    used: int = 0
    sections: list[SectionReport] = field(default_factory=list)
    history_kept: list[int] = field(default_factory=list)
    history_dropped: list[int] = field(default_factory=list)
    history_cut: int | None = None
    layout: ContextLayout = ContextLayout.CLASSIC
    placement: Placement | None = None  # ``cache`` only
    tail_depth: int = 0  # the depth just after the history: where the player's action is
    rebuilt: bool = False  # ``cache``: the ``rebuilt`` sections were used
    history_reserve: int = 0  # the room kept for the history before the optional sections

    def actions_back(self, name: str) -> int | None:
        """How many actions before the player's action a floating section went (0: just
        before it); one heading the history is as far back as the history's first action."""
        if self.placement is None or name not in self.placement.sections:
            return None
        at = self.placement.sections[name][0]
        start = self.placement.history_start
        return self.tail_depth - (at if start is None else max(at, start))


@dataclass(frozen=True)
class BuiltContext:
    system: str
    history: list[HistoryEntry]
    authors_note: str
    # Rendered sections placed in the history: index in ``history`` before which they go
    # (``len(history)``: after it, before the player's action), in order.
    inserts: dict[int, list[str]]
    player_action: str
    report: ContextReport

    def parts(self) -> list[tuple[str, str]]:
        """(role, text) in context order; both output shapes are built from this one list.
        A section placed in the history speaks as the user (many chat templates accept a
        system message only first), so it joins the player's message beside it."""
        out = [("system", self.system)] if self.system else []
        for index, entry in enumerate(self.history):
            out.extend(("user", text) for text in self.inserts.get(index, ()))
            out.append(("user" if entry.role == "player" else "assistant", entry.text))
        out.extend(("user", text) for text in self.inserts.get(len(self.history), ()))
        if self.player_action:
            out.append(("user", self.player_action))
        return out

    def messages(self) -> list[dict[str, str]]:
        """Chat mode: one system message, then alternating user/assistant messages, the first
        of them from the user (many chat templates refuse an assistant turn first)."""
        out: list[dict[str, str]] = []
        for role, text in self.parts():
            if role == "assistant" and (not out or out[-1]["role"] == "system"):
                out.append({"role": "user", "content": STORY_START})
            _append(out, role, text)
        return out

    def prompt(self) -> str:
        """Completion mode: the same parts as one prompt string."""
        return SEPARATOR.join(text for _role, text in self.parts())


def _append(messages: list[dict[str, str]], role: str, content: str) -> None:
    """Alternating roles: consecutive messages of one role are merged."""
    if messages and messages[-1]["role"] == role:
        messages[-1]["content"] += SEPARATOR + content
    else:
        messages.append({"role": role, "content": content})
