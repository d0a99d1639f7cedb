"""Terminal play: the same turn runner and story tree as the web app, in a read-eval loop.

Plain text is a ``do``; an empty line continues the story. Commands start
with a slash (``/help`` lists them). Replies stream to the terminal as they
are generated. Every error is printed as one line and the loop goes on: a
failed reply leaves the action saved, and ``/retry`` generates it.

A number typed as an argument (an id, a take, a count) is read by ``cli.common.number_arg``:
ASCII digits no larger than ``MAX_ID``, anything else refused in one line, never passed on
to the database (which cannot hold a larger integer and would fail with a traceback).
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
from collections.abc import Awaitable, Callable
from typing import Any, TextIO, TypeVar

from talekeeper.bootstrap import Runtime
from talekeeper.cli import cards as card_commands
from talekeeper.cli import world as world_commands
from talekeeper.cli.common import is_number, number_arg
from talekeeper.core.errors import InvalidInput, TalekeeperError
from talekeeper.services.common.rendering import render
from talekeeper.services.common.units import session_scope
from talekeeper.services.common.vocabulary import Authority, MemoryStatus
from talekeeper.services.endpoints.models import ModelSet
from talekeeper.services.memory import manage
from talekeeper.services.memory import summary as story_summary
from talekeeper.services.prompt import insights
from talekeeper.services.prompt.insights import LayoutPart, Snapshot
from talekeeper.services.story import adventures
from talekeeper.services.story.tree import Story
from talekeeper.services.story.turns import Pending
from talekeeper.services.story.view import ActionView
from talekeeper.services.world import derive as world
from talekeeper.services.world import events, marks

PLACEHOLDER = (
    "   (the built-in narrator is a tiny placeholder model: `talekeeper detect` finds the "
    "model servers on this machine, and TALEKEEPER_ENDPOINT_URL with TALEKEEPER_MODEL uses one)"
)
HELP = """\
  text             do something ("open the door")
  (empty line)     continue: the narrator goes on
  /do TEXT  /say TEXT  /story TEXT  /continue
  /retry           a new take of the newest reply (or the missing reply)
  /takes  /take N  list the newest reply's takes, switch to take N
  /undo  /redo     remove the newest action, or restore it
  /edit TEXT       rewrite the newest action; /edit ID TEXT rewrites action ID
  /delete ID       remove action ID from the story
  /fork [ID]       start a branch from action ID (default: the newest)
  /branches        the story tree;  /branch ID  switch to branch ID
  /insights [ID]   what the narrator was shown for reply ID (default: the newest)
  /dry [TEXT]      what the narrator would be shown next, generating nothing
  /show [N]        reprint the last N actions (default 6)
  /memories        the memories of this path; /remember TEXT adds one by hand
  /summary [TEXT]  the Story Summary in force; with TEXT, replace it with yours
  /world           where you are, who is here, what you carry; /world set KIND
                   [subject=NAME] [object=NAME] [value=TEXT] sets it; /world remove ID
  /cards           the story cards; /cards proposals the lore clerk's proposals;
                   /cards accept N, /cards dismiss N, /cards reopen N
  /help  /quit"""

T = TypeVar("T")
RECENT = 6  # actions shown when the game starts and by /show
SETTLE_SECONDS = 30.0  # /memories, /summary and /cards wait this long at most for background work


class Terminal:
    def __init__(
        self, rt: Runtime, adventure_id: int, user_id: int, models: ModelSet, out: TextIO
    ) -> None:
        self.rt, self.adventure_id, self.uid, self.models, self.out = (
            rt,
            adventure_id,
            user_id,
            models,
            out,
        )
        self.commands: dict[str, Callable[[str], Awaitable[bool | None]]] = {
            "do": lambda a: self.turn("do", a),
            "say": lambda a: self.turn("say", a),
            "story": lambda a: self.turn("story", a),
            "continue": lambda a: self.turn("continue", ""),
            "retry": self.retry,
            "takes": self.takes,
            "take": self.take,
            "undo": lambda a: self.change(lambda s: s.undo(), "undone"),
            "redo": lambda a: self.change(lambda s: s.redo(), "restored"),
            "edit": self.edit,
            "delete": self.delete,
            "fork": self.fork,
            "branches": self.branches,
            "branch": self.branch,
            "insights": self.insights,
            "dry": self.dry,
            "show": self.show,
            "memories": self.memories,
            "remember": self.remember,
            "summary": self.summary,
            "world": self.world,
            "cards": self.cards,
            "help": self.help,
            "quit": self.quit,
        }

    def say(self, text: str = "", end: str = "\n") -> None:
        self.out.write(text + end)
        self.out.flush()

    async def on_story(self, work: Callable[[Story], T]) -> T:
        """``work`` on the adventure's tree, in a unit of work of its own, off the loop."""

        def run() -> T:
            with session_scope(self.rt.sessions) as session:
                return work(Story.load(session, self.adventure_id, self.uid, self.rt.memory))

        return await asyncio.to_thread(run)

    async def handle(self, line: str) -> bool:
        """One line of input; False means quit."""
        line = line.strip()
        if not line.startswith("/"):
            line = f"/do {line}" if line else "/continue"
        name, _, arg = line[1:].partition(" ")
        command = self.commands.get(name.lower())
        if command is None:
            self.say(f"Unknown command /{name}: /help lists them.")
            return True
        try:
            return await command(arg.strip()) is not False
        except TalekeeperError as exc:
            self.say(f"! {exc.message}")
            return True

    async def turn(self, type_: str, text: str) -> None:
        pending = await asyncio.to_thread(
            self.rt.turns.begin, self.adventure_id, self.uid, type_, text, self.models
        )
        await self._run(pending)

    async def retry(self, _arg: str) -> None:
        pending = await asyncio.to_thread(
            self.rt.turns.begin_retry, self.adventure_id, self.uid, self.models
        )
        await self._run(pending)

    async def _run(self, pending: Pending) -> None:
        self.say()
        async for event in self.rt.turns.run(pending, self.models):
            if event.kind == "queued":
                ahead = event.data["ahead"]
                self.say(f"(waiting: {ahead} turn{'s' if ahead != 1 else ''} ahead of yours)")
            elif event.kind == "chunk":
                self.say(event.data["text"], end="")
            elif event.kind == "reply":
                reply: ActionView = event.data["reply"]
                many = reply.takes is not None and reply.takes > 1
                takes = f"  [take {reply.take}/{reply.takes}]" if many else ""
                self.say(f"\n{takes}" if takes else "")
            elif event.kind == "error":
                self.say(f"\n! {event.data['error']['message']}")

    async def change(self, do: Callable[[Story], Any], verb: str) -> None:
        def run(story: Story) -> str:
            row = do(story)
            return f"({verb} #{row.id}: {render(row.type, row.text)[:70]})"

        self.say(await self.on_story(run))

    async def takes(self, _arg: str) -> None:
        def run(story: Story) -> list[str]:
            head = story.head()
            current = head.id if head else None
            return [
                f"{'*' if t.id == current else ' '} take {t.take}: {t.text[:70]}"
                for t in story.takes()
            ]

        for line in await self.on_story(run):
            self.say(line)

    async def take(self, arg: str) -> None:
        number = number_arg(arg, "/take N")
        await self.change(lambda s: s.switch_take(number), "switched to")
        await self.show("1")

    async def edit(self, arg: str) -> None:
        first, _, rest = arg.partition(" ")
        if is_number(first) and rest.strip():
            action_id, text = number_arg(first, "/edit ID TEXT"), rest
        else:
            action_id, text = -1, arg

        def run(story: Story) -> Any:
            target = action_id if action_id > 0 else _head_id(story)
            row = story.edit(target, text)
            world.rederive(story, row)  # what the new text states of the world
            return row

        await self.change(run, "edited")

    async def delete(self, arg: str) -> None:
        number = number_arg(arg, "/delete ID")
        await self.change(lambda s: s.delete(number)[0], "deleted")

    async def fork(self, arg: str) -> None:
        def run(story: Story) -> str:
            target = number_arg(arg, "/fork ID") if arg else _head_id(story)
            branch = story.fork(target)
            return f"(now on branch {branch.id}, {branch.name!r}, forked from #{target})"

        self.say(await self.on_story(run))

    async def branches(self, _arg: str) -> None:
        tree = await self.on_story(lambda story: story.tree())
        for b in tree.branches:
            mark = "*" if b.current else " "
            parent = (
                f" from branch {b.parent_id} at #{b.forked_from_action_id}" if b.parent_id else ""
            )
            self.say(f"{mark} {b.id}: {b.name}{parent}, {b.own_actions} own actions")

    async def branch(self, arg: str) -> None:
        number = number_arg(arg, "/branch ID")

        def run(story: Story) -> str:
            branch = story.switch_branch(number)
            head = story.head()  # None when the story is still empty
            newest = (
                f"newest #{head.id}: {render(head.type, head.text)[:70]}"
                if head
                else "the story is empty"
            )
            return f"(now on branch {branch.id}, {branch.name!r}; {newest})"

        self.say(await self.on_story(run))

    async def insights(self, arg: str) -> None:
        def run(story: Story) -> Snapshot:
            return insights.of_action(
                story, number_arg(arg, "/insights ID") if arg else _head_id(story)
            )

        self.print_insights(await self.on_story(run))

    async def dry(self, arg: str) -> None:
        type_ = "do" if arg else "continue"
        data = await self.rt.turns.dry_run(self.adventure_id, self.uid, self.models, type_, arg)
        self.print_insights(data)

    def print_insights(self, data: Snapshot) -> None:
        """A snapshot of any version: a part an older one lacks reads as empty."""
        budget, tokens = data.budget, data.tokens
        self.say(f"model {data.model} ({data.mode}), {budget.used}/{budget.available} tokens")
        if tokens.prompt_evaluated is not None:  # older snapshots lack the figure
            self.say(
                f"  prompt evaluated {tokens.prompt_evaluated:,} "
                f"({tokens.prompt_cached or 0:,} kept from the previous prompt)"
            )
        if data.layout.name:  # older snapshots predate it
            self.say(f"  context layout {layout_line(data.layout)}")
        for repair in data.repairs:
            self.say(f"  reply repaired: {repair.meaning}")
        for section in data.sections:  # "tokens/budget" where the section has a budget
            used = f"{section.tokens}" + (f"/{section.budget}" if section.budget else "")
            self.say(f"  {section.title:<18} {used:>9}  {section.reason}")
        for card in data.cards:
            if card.always_on:
                self.say(f"  card {card.name}: always on")
            elif card.where == "earlier":
                self.say(f"  card {card.name}: fired earlier, kept while the history holds")
            else:
                self.say(f"  card {card.name}: '{card.keyword}' in the {card.where}")
        for memory in data.memories.used:
            self.say(f"  memory #{memory.id} {memory.final_score:.2f}: {memory.text[:60]}")
        for memory in data.memories.left_for_room:
            left = "[left out: no room in the context]"
            self.say(f"  memory #{memory.id} {memory.final_score:.2f} {left}: {memory.text[:60]}")
        for hit in data.knowledge.used:  # older snapshots have none
            where = f", {hit.location}" if hit.location else ""
            meaning = "-" if hit.semantic_score is None else f"{hit.semantic_score:.2f}"
            scores = f"{hit.final_score:.2f} (meaning {meaning}, words {hit.lexical_score:.2f})"
            left = "" if hit.in_context else " [left out: over the Knowledge budget]"
            self.say(f"  library {hit.source_title}{where} {scores}{left}: {hit.text[:60]}")

    async def show(self, arg: str) -> None:
        count = number_arg(arg, "/show N") if arg else RECENT

        def run(story: Story) -> list[str]:
            rows = story.repo.newest(story.lineage(), count)[::-1]
            return [f"#{r.id} {render(r.type, r.text)}" for r in rows]

        for line in await self.on_story(run):
            self.say(line + "\n")

    async def settle(self) -> None:
        """Let the background run of the last turn finish, so what is shown is current."""
        idle = getattr(self.rt.memory, "idle", None)
        if idle is not None:
            with contextlib.suppress(TimeoutError):
                await idle(SETTLE_SECONDS)

    async def memories(self, _arg: str) -> None:
        await self.settle()
        rows = await self.on_story(manage.listing)
        if not rows:
            self.say("(no memories yet: the first is written after 12 actions)")
        for m in rows:
            where = f"{m.source_start}-{m.source_end}" if m.source_start is not None else "you"
            flags = "".join(
                f" [{flag}]"
                for flag, on in (
                    ("pinned", m.pinned),
                    (m.status, m.status != MemoryStatus.ACTIVE),
                    ("inference", m.authority == Authority.HEURISTIC),
                    ("stale", m.stale),
                )
                if on
            )
            self.say(f"  #{m.id} ({where}, used {m.use_count}x){flags}: {m.text}")

    async def remember(self, arg: str) -> None:
        def run(story: Story) -> int:
            return manage.create(story, arg, False, self.rt.memory, self.uid).id

        self.say(f"(remembered as #{await self.on_story(run)})")

    async def summary(self, arg: str) -> None:
        def run(story: Story) -> story_summary.SummaryView:
            if arg:
                story_summary.edit_summary(story.session, story.adventure, arg)
            return story_summary.summary_view(story.session, story.adventure)

        await self.settle()
        view = await self.on_story(run)
        mark = " (stale: being rewritten)" if view.stale else ""
        self.say(f"Story Summary, {len(view.versions)} versions{mark}:")
        self.say("  " + (view.text or f"(none yet: the first after {view.next_at + 1} actions)"))

    async def world(self, arg: str) -> None:
        verb, _, rest = arg.partition(" ")
        if verb == "set":
            given = world_commands.parse_event(rest)
            added = await self.on_story(lambda s: events.add_player_event(s, given))
            self.say(f"(event #{added.id}: {added.kind.value})")
        elif verb == "remove":
            number = number_arg(rest.strip(), "/world remove ID")
            await self.on_story(lambda s: marks.remove_event(s.session, self.uid, number))
            self.say(f"(event #{number} removed)")
        elif verb:
            self.say(f"! {world_commands.USAGE}")
            return
        for line in await self.on_story(world_commands.state_lines):
            self.say(line)

    async def cards(self, arg: str) -> None:
        await self.settle()  # the lore clerk proposes after each turn, in the background
        for line in await self.on_story(lambda story: card_commands.run(story, arg)):
            self.say(line)

    async def help(self, _arg: str) -> None:
        self.say(HELP)

    async def quit(self, _arg: str) -> bool:
        # The last turn's memories are written before leaving (a job left waiting would
        # also run at the next start, but the player expects to find them at once).
        await self.settle()
        return False


def _head_id(story: Story) -> int:
    head = story.head()
    if head is None:
        raise InvalidInput("The story is empty.")
    return head.id


async def play(
    rt: Runtime,
    adventure_id: int | None,
    inp: TextIO | None = None,
    out: TextIO | None = None,
    *,
    user_id: int | None = None,
    user_name: str | None = None,
) -> int:
    """Play as ``user_id`` (default: the local user; ``user_name`` is the account's name in
    accounts mode, for the commands it suggests) until the input ends or /quit. ``inp`` and
    ``out``: the terminal's standard input and output unless given (read when called)."""
    inp = inp if inp is not None else sys.stdin
    out = out if out is not None else sys.stdout
    uid = user_id if user_id is not None else await asyncio.to_thread(rt.local_user_id)

    def pick() -> tuple[int, str]:
        with session_scope(rt.sessions) as session:
            if adventure_id is None:
                listing = adventures.listing(session, uid)
                if not listing:
                    raise InvalidInput(
                        "There is no adventure yet: start one with "
                        "`talekeeper new --scenario "
                        + next(iter(sorted(rt.scenarios)), "NAME")
                        + (f" --user {user_name}" if user_name else "")
                        + "`."
                    )
                return listing[0].id, listing[0].title
            story = Story.load(session, adventure_id, uid, rt.memory)
            return story.adventure.id, story.adventure.title

    chosen, title = await asyncio.to_thread(pick)
    models = rt.models_for(await asyncio.to_thread(rt.settings_for, uid), uid)
    terminal = Terminal(rt, chosen, uid, models, out)
    narrator = models.narrator.model
    terminal.say(f"== {title} (adventure {chosen}), narrator {narrator}; /help for commands ==")
    if models.narrator.provider.info.placeholder:
        terminal.say(PLACEHOLDER)
    terminal.say()
    await terminal.show("")
    while True:
        terminal.say("> ", end="")
        line = await asyncio.to_thread(inp.readline)
        if not line:  # end of input
            terminal.say()
            return 0
        if not await terminal.handle(line):
            return 0


def layout_line(layout: LayoutPart) -> str:
    """The layout, and for ``cache`` how many actions before the end each floating section
    went (0: just before the player's action)."""
    spots = layout.floating or {}
    where = ", ".join(
        f"{name.replace('_', ' ')} "
        f"{'?' if spot.actions_before_end is None else spot.actions_before_end} back"
        for name, spot in spots.items()
    )
    return (layout.name or "?") + (f" ({where})" if where else "")
