"""What the shared-adventure routes answer (docs/sharing.md), read from
``services.story.sharing``."""

from __future__ import annotations

from talekeeper.services.common.vocabulary import MemberRole
from talekeeper.web.schemas.adventures import PersonaOut
from talekeeper.web.schemas.common import Out, Timestamp
from talekeeper.web.schemas.story import AuthorOut


class NewInviteOut(Out):
    """An invite as made: its code and link are shown this once."""

    id: int
    code: str
    url: str
    expires_at: Timestamp


class InviteOut(Out):
    id: int
    role: MemberRole
    uses_left: int
    expires_at: Timestamp
    revoked: bool


class MemberOut(Out):
    user_id: int
    name: str  # the account's name
    role: MemberRole
    persona: PersonaOut


class ReplyTextOut(Out):
    """The reply being written, as far as it is (the feed's ``reply_text``)."""

    ticket: int
    user_id: int  # who sent the turn
    text: str


class PresenceOut(Out):
    """Who has the adventure open, and who of them is typing an action, by persona."""

    here: list[AuthorOut]
    writing: list[AuthorOut]
