"""Golden files: the exact prompts a fixed story renders to, in chat and completion mode.

A change to a prompt, a section title or the assembly order shows up here as a
readable diff. To accept an intended change: ``UPDATE_GOLDEN=1 pytest
tests/services/test_golden_prompts.py`` and review the diff of ``tests/golden/``.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from sqlalchemy.orm import Session, sessionmaker
from tests.kit.model_set import models

from talekeeper.core.tokens import BpeCounter
from talekeeper.services.endpoints.models import ContextLayout
from talekeeper.services.memory.base import NullMemory, Retrieval, UsedMemory
from talekeeper.services.prompt.build import build, request
from talekeeper.services.prompt.inputs import gather
from talekeeper.services.story import adventures
from talekeeper.services.story.scenarios import load_scenarios
from talekeeper.services.story.tree import Story
from talekeeper.storage.db import session_scope
from talekeeper.storage.repositories.users import UserRepository

GOLDEN = Path(__file__).resolve().parent.parent / "golden"
TURNS = [
    ("do", "ask Maren who barred the keepers' door"),
    ("narration", 'Maren spits into the tide. "Brother Ansel, if he still breathes."'),
    ("say", "Then we go up together"),
    ("narration", "She hesitates, then lifts her pole. The gulls scatter from the glass."),
    ("story", "Tamsin counts the steps under her breath: ninety-nine, as always."),
    ("narration", "At the top, the door is warm to the touch. Something hums behind it."),
    ("do", "knock three times"),
]
MEMORY = UsedMemory(
    id=7,
    text="Maren told Tamsin that Brother Ansel barred the keepers' door.",
    semantic_score=0.71,
    lexical_score=0.4,
    final_score=0.77,
    pinned=False,
    authority="accepted_story",
)
GUESS = UsedMemory(
    id=9,
    text="The humming behind the door seemed to come from the lantern itself.",
    semantic_score=0.6,
    lexical_score=0.0,
    final_score=0.6,
    pinned=False,
    authority="heuristic",
)


def check_golden(name: str, text: str) -> None:
    path = GOLDEN / name
    if os.environ.get("UPDATE_GOLDEN") == "1" or not path.exists():
        path.write_text(text, encoding="utf-8")
    assert text == path.read_text(encoding="utf-8"), f"{name} changed; see the module docstring"


def render_story(
    sessions: sessionmaker[Session], mode: str, context_tokens: int, layout: ContextLayout
) -> tuple[str, int, int]:
    scenario = load_scenarios()["lantern-coast"]
    with session_scope(sessions) as session:
        uid = UserRepository(session).local_user().id
        story = adventures.create(session, uid, {}, NullMemory(), scenario)
        for type_, text in TURNS:
            story.append(type_, text)
        story = Story.load(session, story.adventure.id, uid, NullMemory())
        chosen = models(mode, context_tokens, layout)
        inputs = gather(story, chosen)
        built = build(inputs, Retrieval(used=[MEMORY, GUESS], considered=12)).context
        sent = request(built, chosen)
    if mode == "chat":
        rendered = json.dumps([m.__dict__ for m in sent.messages], indent=1, ensure_ascii=False)
    else:
        rendered = sent.prompt
    return rendered + "\n", built.report.used, inputs.budget


LAYOUTS = {ContextLayout.CACHE: "", ContextLayout.CLASSIC: "classic_"}


@pytest.mark.parametrize("layout", list(ContextLayout))
@pytest.mark.parametrize("mode", ["chat", "completion"])
def test_a_roomy_context_renders_exactly_as_the_golden_file(
    sessions: sessionmaker[Session], mode: str, layout: ContextLayout
) -> None:
    rendered, used, budget = render_story(sessions, mode, 4096, layout)
    check_golden(f"lantern_coast_{LAYOUTS[layout]}{mode}.txt", rendered)
    assert used <= budget


@pytest.mark.parametrize("layout", list(ContextLayout))
def test_a_tight_context_drops_the_oldest_history_and_stays_in_budget(
    sessions: sessionmaker[Session], layout: ContextLayout
) -> None:
    rendered, used, budget = render_story(sessions, "completion", 640, layout)
    check_golden(f"lantern_coast_{LAYOUTS[layout]}tight_completion.txt", rendered)
    assert used <= budget
    assert BpeCounter().count(rendered) <= budget + 2  # the joins are counted in the budget
    assert "You reach Gullreach" not in rendered  # the opening went first
    assert rendered.rstrip().endswith("> You knock three times.")
