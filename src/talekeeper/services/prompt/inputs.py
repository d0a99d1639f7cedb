"""Gathering a turn's context: what is read from the story for the prompt.

Invariants:

- What ``gather`` reads is frozen (``ContextInputs``): nothing assigns to it afterwards.
  The build (``services.prompt.build``) makes a ``BuiltContext`` of it; which cards the
  Story Cards section holds then is read from the two (``ContextInputs.section_cards``).
- Only the newest part of the path is read: pages of ``HISTORY_PAGE`` actions,
  newest first, until their tokens exceed the whole budget, so the builder
  always has at least as much history as fits and the cost does not grow with
  the length of the story (token counts are cached by the counter, so the
  builder's own count of the same texts is free).
- The player's action of this turn is the newest player action just below the
  reply's slot; it is sent last, after the history (and is the retrieval
  query's "input"). A continue has none.
- The budget is the context length minus the reply length minus what the
  chat template and the provider add around our text.
- ``cache``: where the previous prompt put things, and the cards its Story Cards
  section held, come from the newest reply's placement record
  (``services.prompt.placement``), never from its Insights snapshot (a display
  format): a reply without one leaves nothing known, and everything is placed anew.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from talekeeper.core.errors import ConfigurationError
from talekeeper.core.lineage import Lineage
from talekeeper.core.tokens import TokenCounter
from talekeeper.services.cards.rules import (
    CARD_SCAN_ACTIONS,
    FiredCard,
    turn_cards,
)
from talekeeper.services.common.rendering import NARRATION, is_player, render
from talekeeper.services.endpoints.models import ContextLayout, ModelSet
from talekeeper.services.library import store as library
from talekeeper.services.memory.scene import Scene, query_texts, scene_for
from talekeeper.services.prompt import budgets
from talekeeper.services.prompt import placement as placement_record
from talekeeper.services.prompt.built import BuiltContext
from talekeeper.services.prompt.card_sections import cards_within
from talekeeper.services.prompt.floating import Placement, top_digest_of
from talekeeper.services.prompt.placement import Carried
from talekeeper.services.prompt.sections import HistoryEntry, Section
from talekeeper.services.prompt.state import state_section
from talekeeper.services.story import sharing
from talekeeper.services.story.sharing import Cast
from talekeeper.services.story.tree import Story
from talekeeper.services.world import events as world_events
from talekeeper.services.world.addressed import Addressed, AddressKind, addressed
from talekeeper.services.world.events import EventView, TurnWorld
from talekeeper.services.world.knowing import Witness, absent_during
from talekeeper.services.world.knowing_world import setters
from talekeeper.services.world.projection import PLAYER, WorldState
from talekeeper.services.world.scene import with_world
from talekeeper.services.world.witnesses import presence, told_to
from talekeeper.storage.models import Action, Adventure
from talekeeper.storage.repositories.memory import MemoryRepository
from talekeeper.storage.repositories.story import ActionText
from talekeeper.storage.vocabulary import EntityKind, SummaryTrigger, WitnessMode

HISTORY_PAGE = 64  # actions per read: one indexed range, about a screen of story
MAX_HISTORY_READ = 4096  # never read more than this many actions for one context
TEMPLATE_RESERVE = 48  # tokens a template adds once (BOS, the "[Story start]" turn, the reply's
# own header); per-message markers are charged per part (CHAT_MESSAGE_OVERHEAD)
CHAT_MESSAGE_OVERHEAD = 8  # ChatML, Llama 3 and Gemma wrap each message in 5-7 tokens
MIN_BUDGET = 64  # below this no useful context fits


def memory_budget(prompt_budget: int, slots: int) -> int:
    """The Memories section's budget for ``slots`` memories in a prompt of ``prompt_budget``
    tokens (``budgets.memories``)."""
    return budgets.memories(slots).tokens(prompt_budget)


def fills(budget: int, slots: int) -> bool:
    """Whether a Memories budget has room for more than each memory's winning passage.
    Only a budget above the floor is filled: passages follow the player's words, so they
    change every turn, and at 1,200 tokens of context filling the floor took the cache
    layout from evaluating a quarter of each prompt to more than half."""
    return budget > budgets.MEMORY_SLOT_FLOOR * slots


DEFAULT_INSTRUCTIONS = (Path(__file__).parent / "texts" / "narrator_default.txt").read_text(
    encoding="utf-8"
)
# The same, for a shared adventure several play (the third person: docs/sharing.md).
SHARED_INSTRUCTIONS = (Path(__file__).parent / "texts" / "narrator_shared.txt").read_text(
    encoding="utf-8"
)


@dataclass(frozen=True)
class ContextInputs:
    """What ``gather`` read for a turn; the build makes a context of it and leaves it as
    it was (``services.prompt.build``)."""

    adventure_id: int
    branch_id: int
    lineage: Lineage
    base_head_id: int | None  # the head when planned: the reply lands right after it
    retry_of: int | None  # the narration a retry replaces with a new take
    fixed: tuple[Section, ...]
    history: tuple[HistoryEntry, ...]
    authors_note: str
    player_action: str
    query_input: str
    query_context: str
    bank: bool  # the adventure's Memory Bank toggle
    scene: Scene
    fired: tuple[FiredCard, ...]  # by their keywords (the scene's cards)
    cards: tuple[FiredCard, ...]  # the Story Cards section's: the always-on ones first
    budget: int
    counter: TokenCounter
    mode: str
    top_k: int
    reserved: int
    more_history: bool  # older actions exist that were not even read
    knowledge_sources: tuple[int, ...] = ()  # the attached sources
    knowledge_top_k: int = 0
    # ``cache``: the Story Cards section's cards (``cards`` holds them, then the newly fired
    # ones), and the section's cards when the whole history is evaluated again anyway.
    cards_held: tuple[int, ...] = ()
    cards_rebuilt: tuple[FiredCard, ...] = ()
    # The adventure's section budgets (its own shares and ceilings over the defaults), and
    # the names of the fired cards the Story Cards' budget left out (of ``cards``, and of
    # ``cards_rebuilt``).
    section_budgets: budgets.SectionBudgets = field(
        default_factory=lambda: budgets.SectionBudgets.of(None)
    )
    cards_left_out: tuple[str, ...] = ()
    cards_rebuilt_left_out: tuple[str, ...] = ()
    # ``cache``: the Story Summary in force, when a newer automatic one waits for that turn
    # (``fixed`` shows the one the previous prompt had).
    summary_rebuilt: Section | None = None
    layout: ContextLayout = ContextLayout.CLASSIC
    previous: Placement | None = None  # where the previous prompt on this path put things
    world: WorldState | None = None  # the world's state the turn reads (Current state)
    world_changes: tuple[EventView, ...] = ()  # its events since the previous turn read it
    witness: Witness = Witness()  # who the player's input addresses (nobody by default)

    @property
    def cards_budget(self) -> int:
        """The Story Cards sections' budget: the adventure's share of the prompt's."""
        return self.section_budgets.story_cards.tokens(self.budget)

    def section_cards(self, built: BuiltContext) -> tuple[FiredCard, ...]:
        """The cards of the Story Cards sections ``built`` holds: as they fire now when its
        build brought the section up to date (``ContextReport.rebuilt``), else ``cards``."""
        return self.cards_rebuilt if built.report.rebuilt else self.cards

    def cards_held_in(self, built: BuiltContext) -> tuple[int, ...]:
        """The ids of the cards the Story Cards section of ``built`` holds (not the newly
        fired ones of ``cache``'s section of their own): what the next turn keeps."""
        if built.report.rebuilt:
            return tuple(f.card.id for f in self.cards_rebuilt)
        return self.cards_held


def stable_sections(adventure: Adventure, cast: Cast | None = None) -> tuple[Section, Section]:
    """AI Instructions and Plot Essentials (with the player's persona, or the cast of a
    shared adventure several play): with the Story Summary, the sections above the history."""
    persona = cast.line() if cast is not None else persona_line(adventure)
    essentials = "\n".join(p for p in (adventure.plot_essentials.strip(), persona) if p)
    instructions = adventure.ai_instructions.strip()
    return (
        Section(
            "ai_instructions",
            instructions or (SHARED_INSTRUCTIONS if cast else DEFAULT_INSTRUCTIONS).strip(),
            "the adventure's AI Instructions" if instructions else "default narrator instructions",
        ),
        Section("plot_essentials", essentials, "Plot Essentials and the player's persona"),
    )


def persona_line(adventure: Adventure) -> str:
    name = adventure.persona_name.strip()
    if not name:
        return ""
    pronouns = f" ({adventure.persona_pronouns.strip()})" if adventure.persona_pronouns else ""
    description = adventure.persona_description.strip()
    return f"The player's character: {name}{pronouns}." + (f" {description}" if description else "")


def budget_for(models: ModelSet) -> tuple[int, int]:
    reserved = TEMPLATE_RESERVE + models.narrator.provider.info.reserved_tokens
    budget = models.context_tokens - models.reply_tokens - reserved
    if budget < MIN_BUDGET:
        raise ConfigurationError(
            f"A context of {models.context_tokens} tokens leaves {budget} after the reply "
            f"({models.reply_tokens}) and the template ({reserved}): raise the context length "
            "(TALEKEEPER_CONTEXT_TOKENS) or lower the reply length (TALEKEEPER_REPLY_TOKENS)."
        )
    return budget, reserved


def read_history(
    story: Story,
    below_depth: int | None,
    budget: int,
    counter: TokenCounter,
    cast: Cast | None = None,
) -> tuple[list[tuple[ActionText, str]], bool]:
    """The newest actions of the path with their rendering (oldest first), and whether older
    ones remain unread. With a ``cast``, players' actions read in the third person."""
    rows: list[tuple[ActionText, str]] = []
    tokens = 0
    lineage = story.lineage()
    while tokens <= budget and len(rows) < MAX_HISTORY_READ:
        below = rows[-1][0].depth if rows else below_depth
        page = story.repo.newest_texts(lineage, HISTORY_PAGE, below_depth=below)
        for row in page:
            rendered = render(row.type, row.text, _speaker(cast, row.author))
            tokens += counter.count(rendered)
            rows.append((row, rendered))
        if len(page) < HISTORY_PAGE:
            return rows[::-1], False
    return rows[::-1], True


@dataclass(frozen=True)
class _Path:
    """The newest part of the path as a turn reads it."""

    rows: list[tuple[ActionText, str]]  # the history (oldest first) with its rendering
    more: bool  # older actions exist that were not read
    head_id: int | None  # the head the reply lands after
    player_text: str  # the player's action of this turn, as typed ("" for a continue)
    rendered_action: str  # and as the prompt shows it
    player_type: str = ""  # its type (do, say, story; "" for a continue)
    depth: int = 0  # the depth of the player's action, else of the reply to come

    def history(self) -> tuple[HistoryEntry, ...]:
        return tuple(
            HistoryEntry(r.id, "narrator" if r.type == NARRATION else "player", rendered, r.depth)
            for r, rendered in self.rows
        )

    @property
    def newest_narration(self) -> str:
        return next((r.text for r, _ in reversed(self.rows) if r.type == NARRATION), "")

    @property
    def recent_text(self) -> str:
        """The text that fires the cards: the scene's last actions and the player's."""
        recent = [rendered for _, rendered in self.rows[-(CARD_SCAN_ACTIONS - 1) :]]
        return "\n".join([*recent, self.rendered_action])


def _speaker(cast: Cast | None, author: str | None) -> str | None:
    return None if cast is None else cast.speaker(author)


def _read_path(
    story: Story,
    retry_of: Action | None,
    hypothetical: tuple[str, str] | None,
    budget: int,
    counter: TokenCounter,
    cast: Cast | None,
) -> _Path:
    below = retry_of.depth if retry_of else None
    rows, more = read_history(story, below, budget, counter, cast)
    head_id = retry_of.id if retry_of else (rows[-1][0].id if rows else None)
    player_type, player_text, author = *(hypothetical or ("", "")), None
    depth = rows[-1][0].depth + 1 if rows else 0
    if hypothetical is None and rows and is_player(rows[-1][0].type):
        player = rows.pop()[0]
        player_type, player_text, author = player.type, player.text, player.author
        depth = player.depth
    speaker = _speaker(cast, author)
    rendered_action = render(player_type, player_text, speaker) if player_type else ""
    return _Path(rows, more, head_id, player_text, rendered_action, player_type, depth)


def gather(
    story: Story,
    models: ModelSet,
    *,
    retry_of: Action | None = None,
    hypothetical: tuple[str, str] | None = None,
) -> ContextInputs:
    budget, reserved = budget_for(models)
    counter = models.narrator.provider.token_counter(models.narrator.model)
    cast = sharing.cast(story.session, story.adventure)
    path = _read_path(story, retry_of, hypothetical, budget, counter, cast)
    cards = turn_cards(story.session, story.adventure.id, path.recent_text, path.player_text)
    cache = models.context_layout is ContextLayout.CACHE  # only it keeps things in place
    previous = previous_placement(story, path.rows, retry_of) if cache else None
    own = budgets.SectionBudgets.stored(story.adventure.section_budgets)
    card_parts, card_fields = cards_within(story, cards.section, previous, own, budget, counter)
    state, changes, witness = _world(story, path, retry_of, hypothetical is not None)
    scene = with_world(scene_for(story.adventure, cards.fired, path.recent_text), state)
    narration = path.newest_narration
    query_input, query_context = query_texts(path.player_text, scene, narration, counter)
    lineage = story.lineage()
    stable = stable_sections(story.adventure, cast)
    summary, summary_rebuilt = _summary(story, lineage, previous, stable)
    current = state_section(state, counter, own.current_state.tokens(budget))
    fixed = (*stable, summary, *card_parts, current)
    knowledge_sources = library.attached_ids(story.session, story.adventure.id)
    return ContextInputs(
        adventure_id=story.adventure.id,
        branch_id=story.branch.id,
        lineage=lineage,
        base_head_id=path.head_id,
        retry_of=retry_of.id if retry_of else None,
        fixed=fixed,
        history=path.history(),
        authors_note=story.adventure.authors_note,
        player_action=path.rendered_action,
        query_input=query_input,
        query_context=query_context,
        bank=story.adventure.memory_bank,
        scene=scene,
        fired=tuple(cards.fired),
        **card_fields,
        section_budgets=own,
        summary_rebuilt=summary_rebuilt,
        budget=budget,
        counter=counter,
        mode=models.mode,
        top_k=models.memory_top_k,
        reserved=reserved,
        more_history=path.more,
        knowledge_sources=tuple(knowledge_sources),
        knowledge_top_k=models.knowledge_top_k,
        layout=models.context_layout,
        previous=previous.placement if previous else None,
        world=state,
        world_changes=tuple(changes),
        witness=witness,
    )


def _world(
    story: Story, path: _Path, retry_of: Action | None, hypothetical: bool
) -> tuple[WorldState, list[EventView], Witness]:
    """The world the turn reads, its events since the previous turn read it, and who the
    player's input addresses."""
    # The previous turn read the world down to the action before its reply: what is new since.
    since = next((r.depth - 1 for r, _ in reversed(path.rows) if r.type == NARRATION), -1)
    max_depth = retry_of.depth - 1 if retry_of else None
    read = world_events.for_turn(story, since, max_depth)
    return read.state, read.changed, _witness(story, path, read, hypothetical)


def _witness(story: Story, path: _Path, read: TurnWorld, hypothetical: bool) -> Witness:
    """Who the player's input addresses (in a shared adventure that several play, when it
    addresses no one, the character acting: ``AddressKind.ACTING``), and (when the
    adventure's mode asks) who was present along the path and what they were told: from
    the same events the turn's state was folded from (for a retry, not the retried
    reply's). A dry run is the host's turn, as it reads."""
    mode = WitnessMode(story.adventure.witness_mode)
    state, steps, party = read.state, read.steps, read.party
    people = [r for r in state.entities if r.kind == EntityKind.PERSON]
    present, actor, seen = state.present, None, None
    if party is not None:
        party = party.acting_from(path.depth, PLAYER) if hypothetical else party
        seen = presence(steps, party)
        actor = party.ref(party.actor_at(path.depth))
        present = tuple(r for r in seen.at(path.depth) if r.id != actor.id)
        people += [r for r in party.everyone() if r.id != actor.id and r not in people]
    found = addressed(path.player_type, path.player_text, present, people)
    saw_all = False
    if found is None and actor is not None and seen is not None:
        found = Addressed(actor, AddressKind.ACTING, "")
        saw_all = absent_during(seen, actor.id, 0, path.depth) is None
    if found is None:
        return Witness(mode)
    if mode is WitnessMode.OFF:
        return Witness(mode, found.who, found.how.value, found.words)
    told = told_to(steps, found.who.id)
    secrets = MemoryRepository(story.session).secrets(story.adventure.id)
    return Witness(
        mode,
        found.who,
        found.how.value,
        found.words,
        seen or presence(steps),
        told,
        secrets,
        setters(steps, state.ignored),
        read.secrets,
        saw_all,
    )


def _summary(
    story: Story, lineage: Lineage, previous: Carried | None, stable: Sequence[Section]
) -> tuple[Section, Section | None]:
    """The Story Summary section, and (``cache``) the one a rebuild brings in.

    A new automatic summary waits for a turn that evaluates the whole history again
    anyway, as the held cards do: until then the section shows the version in force before
    it, which the previous prompt had (``stable``: the other sections above the history,
    to tell by its digest whether the previous prompt had the new one already). A summary
    the player wrote goes in at once."""
    repo = MemoryRepository(story.session)
    summary = repo.summary_in_force(story.adventure.id, lineage)
    current = Section(
        "story_summary", summary.text if summary else "", "the Story Summary in force on this path"
    )
    if previous is None or summary is None or summary.trigger != SummaryTrigger.INTERVAL:
        return current, None
    if top_digest_of([*stable, current]) == previous.placement.top:
        return current, None  # already in the previous prompt
    older = repo.summary_in_force(story.adventure.id, lineage, before=summary.id)
    reason = (
        "the Story Summary the previous prompt had: the summary pass's newer one goes in when"
        " the history is next evaluated again whole, so that this turn only appends"
    )
    return Section("story_summary", older.text if older else "", reason), current


def previous_placement(
    story: Story, rows: list[tuple[ActionText, str]], retry_of: Action | None
) -> Carried | None:
    """What the newest reply on this path left for the next turn (for a retry: the reply
    being retried, whose prompt was the last one sent for this place in the story): where
    its prompt put things and which cards it held (``services.prompt.placement``)."""
    reply_id = retry_of.id if retry_of else None
    if reply_id is None:
        reply_id = next((r.id for r, _ in reversed(rows) if r.type == NARRATION), None)
    return placement_record.read(story.repo.placement(reply_id)) if reply_id is not None else None
