"""Shared adventures: invites, joining, members and their roles (docs/sharing.md).

Invariants:

- Accounts mode only: without accounts there is one player and nothing to share, and
  every call here says so (``needs_accounts``), once what was asked is checked: an
  unknown adventure or a bad field is told as such first. In local mode no invite, member
  or code exists, so revoking, changing or removing one is "not found".
- An invite's code is shown once, when it is made; only its SHA-256 is kept. It admits
  while it is not revoked, not expired and has uses left; each join spends one use.
- An adventure has at most ``MAX_MEMBERS`` people, its host counted.
- Only the host makes and revokes invites, changes roles, removes others and ends
  sharing; a member may leave; every member may list the members.
- Joining again with any valid code changes nothing and spends nothing.
"""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy.orm import Session

from talekeeper.core.clock import utcnow
from talekeeper.core.errors import Conflict, Forbidden, InvalidInput, NotFound
from talekeeper.core.lineage import lineage_of
from talekeeper.services.common import limits
from talekeeper.services.common.rendering import is_player
from talekeeper.services.story import access, feed, queue
from talekeeper.services.story.access import load_adventure
from talekeeper.services.story.feed import FeedView
from talekeeper.services.story.view import Author, Persona
from talekeeper.storage.models import Adventure, AdventureInvite, AdventureMember, User
from talekeeper.storage.repositories.sharing import SharingRepository
from talekeeper.storage.repositories.story import StoryRepository
from talekeeper.storage.vocabulary import FeedKind, MemberRole

MAX_MEMBERS = 8  # the host and seven others
INVITE_HOURS = 72  # how long an invite admits, unless the host says otherwise
INVITE_HOURS_MAX = 24 * 30
# An invite's link: this, then its code, in the fragment, which a browser never sends (no
# access log or proxy sees the code; the join page reads it there).
JOIN_PATH = "/join#"


LOCAL_MODE = (
    "Shared adventures need accounts: this server plays in local mode, one player and no "
    "sign-in. Start it with TALEKEEPER_AUTH=accounts to invite others (docs/sharing.md)."
)


@dataclass(frozen=True)
class Asker:
    """Who asks, and whether the server has accounts: what is asked is checked first (an
    unknown adventure is one, a bad field is named), then the mode (``needs_accounts``)."""

    uid: int
    accounts: bool


# The members who play a character (a viewer plays no one).
PLAYS = (MemberRole.PLAYER, MemberRole.COHOST)


def needs_accounts(who: Asker) -> None:
    if not who.accounts:
        raise InvalidInput(LOCAL_MODE, code="sharing_needs_accounts")


@dataclass(frozen=True)
class InviteView:
    id: int
    role: MemberRole
    uses_left: int
    expires_at: datetime
    revoked: bool


@dataclass(frozen=True)
class NewInvite:
    """An invite as made: the only time its code is seen."""

    id: int
    code: str
    url: str
    expires_at: datetime


@dataclass(frozen=True)
class MemberView:
    user_id: int
    name: str  # the account's
    role: MemberRole
    persona: Persona


def _digest(code: str) -> str:
    """The SHA-256 (hex) an invite is stored and found by."""
    return hashlib.sha256(code.encode("utf-8", "surrogatepass")).hexdigest()


def _invite_view(row: AdventureInvite) -> InviteView:
    return InviteView(
        row.id, MemberRole(row.role), row.uses_left, row.expires_at, row.revoked_at is not None
    )


def invite(
    session: Session, adventure_id: int, who: Asker, role: MemberRole, hours: int, uses: int
) -> NewInvite:
    load_adventure(session, adventure_id, who.uid, MemberRole.HOST)
    if role not in (MemberRole.PLAYER, MemberRole.VIEWER):
        raise InvalidInput("'role' must be player or viewer: the host makes a co-host of a member.")
    if not 1 <= hours <= INVITE_HOURS_MAX:
        raise InvalidInput(f"'expires_in_hours' must be 1 to {INVITE_HOURS_MAX}.")
    if not 1 <= uses <= MAX_MEMBERS - 1:
        raise InvalidInput(f"'uses' must be 1 to {MAX_MEMBERS - 1}: at most {MAX_MEMBERS} play.")
    needs_accounts(who)
    code = secrets.token_urlsafe(18)
    row = AdventureInvite(
        adventure_id=adventure_id,
        code_hash=_digest(code),
        role=role,
        uses_left=uses,
        expires_at=utcnow() + timedelta(hours=hours),
    )
    SharingRepository(session).add(row)
    return NewInvite(row.id, code, JOIN_PATH + code, row.expires_at)


def invites(session: Session, adventure_id: int, who: Asker) -> list[InviteView]:
    load_adventure(session, adventure_id, who.uid, MemberRole.HOST)
    needs_accounts(who)
    return [_invite_view(row) for row in SharingRepository(session).invites(adventure_id)]


def revoke(session: Session, adventure_id: int, invite_id: int, who: Asker) -> InviteView:
    load_adventure(session, adventure_id, who.uid, MemberRole.HOST)
    row = SharingRepository(session).invite(invite_id)
    if row is None or row.adventure_id != adventure_id:
        raise NotFound(f"Adventure {adventure_id} has no invite {invite_id}.{_why(who)}")
    row.revoked_at = row.revoked_at or utcnow()
    return _invite_view(row)


def _not_host(role: MemberRole) -> None:
    if role is MemberRole.HOST:
        raise InvalidInput("'role' must be cohost, player or viewer: an adventure has one host.")


def _persona(value: dict[str, str | None]) -> dict[str, str]:
    fields = (
        ("name", "persona_name", limits.PERSONA_NAME_MAX),
        ("pronouns", "persona_pronouns", limits.PERSONA_PRONOUNS_MAX),
        ("description", "persona_description", limits.PERSONA_DESCRIPTION_MAX),
    )
    return {
        column: limits.text_field(value.get(key) or "", f"persona.{key}", limit,
                                  required=key == "name")
        for key, column, limit in fields
    }  # fmt: skip


def join(session: Session, code: str, who: Asker, persona: dict[str, str | None]) -> int:
    """Make the asker a member by ``code``; the adventure's id."""
    fields = _persona(persona)
    repo = SharingRepository(session)
    row = repo.invite_by_hash(_digest(code)) if len(code) <= 100 else None
    if row is None:
        hint = "" if who.accounts else f" {LOCAL_MODE}"
        raise NotFound(
            f"There is no such invite: check the link, or ask the host for a new one.{hint}"
        )
    needs_accounts(who)
    adventure = session.get(Adventure, row.adventure_id)
    if adventure is None or adventure.user_id == who.uid or repo.member(adventure.id, who.uid):
        return row.adventure_id  # the host, or a member already: nothing to do
    if row.revoked_at is not None or row.uses_left <= 0 or row.expires_at <= utcnow():
        why = "was revoked" if row.revoked_at is not None else (
            "is used up" if row.uses_left <= 0 else "has expired"
        )  # fmt: skip
        raise Conflict(f"This invite {why}: ask the host for a new one.")
    if repo.count(adventure.id) >= MAX_MEMBERS - 1:
        raise Conflict(f"This adventure is full: at most {MAX_MEMBERS} play it.")
    repo.add(AdventureMember(adventure_id=adventure.id, user_id=who.uid, role=row.role, **fields))
    row.uses_left -= 1
    feed.tell(session, adventure.id, FeedKind.MEMBERS, change="joined", user_id=who.uid)
    return adventure.id


def members(session: Session, adventure_id: int, who: Asker) -> list[MemberView]:
    """The host first, then the members in the order they joined."""
    adventure = load_adventure(session, adventure_id, who.uid, MemberRole.VIEWER)
    needs_accounts(who)
    host = session.get(User, adventure.user_id)
    persona = Persona(
        adventure.persona_name, adventure.persona_pronouns, adventure.persona_description
    )
    name = host.name if host is not None else ""
    out = [MemberView(adventure.user_id, name, MemberRole.HOST, persona)]
    for row, name in SharingRepository(session).members(adventure_id):
        persona = Persona(row.persona_name, row.persona_pronouns, row.persona_description)
        out.append(MemberView(row.user_id, name, MemberRole(row.role), persona))
    return out


def _member(
    session: Session, adventure_id: int, user_id: int, who: Asker | None = None
) -> AdventureMember:
    row = SharingRepository(session).member(adventure_id, user_id)
    if row is None:
        raise NotFound(f"Adventure {adventure_id} has no member {user_id}.{_why(who)}")
    return row


def _why(who: Asker | None) -> str:
    """Why nothing of sharing is found, where that is the reason: local mode."""
    return f" {LOCAL_MODE}" if who is not None and not who.accounts else ""


def set_role(
    session: Session, adventure_id: int, user_id: int, role: MemberRole, who: Asker
) -> list[MemberView]:
    load_adventure(session, adventure_id, who.uid, MemberRole.HOST)
    _not_host(role)
    _member(session, adventure_id, user_id, who).role = role
    feed.tell(session, adventure_id, FeedKind.MEMBERS, change="role", user_id=user_id)
    return members(session, adventure_id, who)


def remove(session: Session, adventure_id: int, user_id: int, who: Asker) -> None:
    """The host removes a member, or a member leaves (``user_id`` is their own)."""
    need = MemberRole.VIEWER if user_id == who.uid else MemberRole.HOST
    load_adventure(session, adventure_id, who.uid, need)
    SharingRepository(session).remove(_member(session, adventure_id, user_id, who))
    feed.tell(session, adventure_id, FeedKind.MEMBERS, change="removed", user_id=user_id)


def end(session: Session, adventure_id: int, who: Asker) -> None:
    """No one but the host is left, and no invite admits anyone."""
    load_adventure(session, adventure_id, who.uid, MemberRole.HOST)
    needs_accounts(who)
    SharingRepository(session).end(adventure_id)
    feed.tell(session, adventure_id, FeedKind.MEMBERS, change="ended")


def turn_taker(session: Session, adventure_id: int, uid: int) -> tuple[int, Author | None]:
    """For ``uid`` acting in the adventure (its host or a player; a viewer is refused): the
    host, whose settings, models and usage the turn runs on, and the action's author while
    the adventure is shared (None in single play: every action is its one player's)."""
    adventure = load_adventure(session, adventure_id, uid, MemberRole.PLAYER)
    if not SharingRepository(session).count(adventure_id):
        return adventure.user_id, None
    if adventure.user_id == uid:
        name = lead_name(session, adventure)
    else:
        name = _member(session, adventure_id, uid).persona_name
    return adventure.user_id, Author(uid, name)


def lead_name(session: Session, adventure: Adventure) -> str:
    """The host's character's name: the adventure's persona, else the host's account name."""
    host = session.get(User, adventure.user_id)
    return adventure.persona_name.strip() or (host.name if host is not None else "The host")


@dataclass(frozen=True)
class Cast:
    """The characters of a shared adventure that several play: its host's, then each
    player's in the order they joined (viewers play no one)."""

    host: Persona
    players: tuple[Persona, ...]

    def speaker(self, author: str | None) -> str:
        """Whom a player's action is told of: its author's character; an action that names
        none (written before sharing) is the host's."""
        return author or self.host.name

    def line(self) -> str:
        """What the narrator is told of the players, in the place of one player's persona."""
        people = []
        for persona in (self.host, *self.players):
            pronouns = f" ({persona.pronouns})" if persona.pronouns else ""
            about = f": {persona.description}" if persona.description else ""
            people.append(f"{persona.name}{pronouns}{about}")
        return (
            "Several players share this story, each as their own character: "
            + "; ".join(people)
            + ". Narrate in the third person, and never act, speak or decide for any of them."
        )


def cast(session: Session, adventure: Adventure) -> Cast | None:
    """The adventure's cast when more than one plays it; None for one player alone, whose
    story is told in the second person."""
    rows = [r for r, _ in SharingRepository(session).members(adventure.id) if r.role in PLAYS]
    if not rows:
        return None
    name = lead_name(session, adventure)
    lead = Persona(name, adventure.persona_pronouns, adventure.persona_description.strip())
    players = tuple(
        Persona(r.persona_name, r.persona_pronouns, r.persona_description) for r in rows
    )
    return Cast(lead, players)


def may_change(session: Session, adventure_id: int, uid: int, action_id: int | None) -> int:
    """The host's id, when ``uid`` may retry the newest reply (``action_id`` None) or edit
    action ``action_id``: the host always; a player only their own newest action (and the
    reply to it); a viewer never."""
    adventure = load_adventure(session, adventure_id, uid, MemberRole.PLAYER)
    if access.role_of(session, adventure, uid) in (MemberRole.HOST, MemberRole.COHOST):
        return adventure.user_id
    repo = StoryRepository(session)
    links = repo.links(adventure_id)
    branch = adventure.current_branch_id
    newest = repo.newest(lineage_of(links, branch), 2) if branch in links else []
    acted = next((row for row in newest if is_player(row.type)), None)
    if acted is None or acted.author_id != uid or action_id not in (None, acted.id):
        raise Forbidden(
            "A player may retry or edit only their own newest action; anything else of the "
            "story is its host's to change."
        )
    return adventure.user_id


def feed_after(session: Session, adventure_id: int, who: Asker, after: int) -> list[FeedView]:
    """The adventure's feed after event ``after``, for any of its members."""
    load_adventure(session, adventure_id, who.uid, MemberRole.VIEWER)
    needs_accounts(who)
    return feed.since(session, adventure_id, after)


def role_in(session: Session, adventure: Adventure, uid: int) -> MemberRole:
    """``uid``'s role in an adventure they belong to (``access.load_adventure`` checked)."""
    role = access.role_of(session, adventure, uid)
    if role is None:
        raise NotFound(f"There is no adventure {adventure.id}.")
    return role


def is_shared(session: Session, adventure_id: int) -> bool:
    return SharingRepository(session).count(adventure_id) > 0


def people(session: Session, adventure: Adventure) -> dict[int, str]:
    """The adventure's people by account, each with the persona they play: the host (the
    adventure's persona, else the account's name), then its members in the order they
    joined."""
    return people_playing(session, adventure, every=True)


def people_playing(session: Session, adventure: Adventure, every: bool = False) -> dict[int, str]:
    """The host's and the players' (and co-hosts') characters by account; ``every``: the
    viewers' personas too. Empty when no member plays (one player alone)."""
    rows = SharingRepository(session).members(adventure.id)
    named = {r.user_id: r.persona_name for r, _ in rows if every or r.role in PLAYS}
    if not named and not every:
        return {}
    return {adventure.user_id: lead_name(session, adventure), **named}


def turns_now(session: Session, adventure: Adventure) -> list[Author]:
    """Who has a turn live on the adventure, by the persona they play: the one being
    answered first, then those waiting (``queue``), in the order they asked."""
    askers = queue.askers(session, adventure.id)
    if not askers:
        return []
    named = people(session, adventure)
    return [Author(uid, named.get(uid, "")) for uid in askers]
