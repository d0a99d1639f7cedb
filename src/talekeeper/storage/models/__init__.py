"""SQLAlchemy 2 models: the schema, kept portable between SQLite and PostgreSQL. One module
per aggregate (``accounts``, ``story``, ``replies``, ``memory``, ``jobs``, ``library``, ``world``,
``proposals``, ``sharing``, ``ai_calls``), on the base and column types of ``base``; this
package re-exports every model, so ``from talekeeper.storage.models import X`` names any of them.

Invariants:

- Importing this package registers every table on ``Base.metadata``: what the migrations'
  environment compares against and what a test database is created from.
- The models and the Alembic migrations describe the same schema (a test runs
  autogenerate against a migrated database and expects no difference).
- Every timestamp is stored as UTC and read back timezone-aware (``UtcDateTime``); row ids,
  and every column that holds one, are 64-bit on SQLite and PostgreSQL alike (``ID``).
"""

from __future__ import annotations

from talekeeper.storage.models.accounts import (
    LOCAL_USER,
    ApiToken,
    AuthSession,
    SignInCount,
    User,
    UserSetting,
)
from talekeeper.storage.models.ai_calls import AiCall
from talekeeper.storage.models.base import ID, NAMING, Base, UtcDateTime
from talekeeper.storage.models.jobs import BackgroundJob, DerivedState
from talekeeper.storage.models.library import AdventureKnowledge, LibraryPassage, LibrarySource
from talekeeper.storage.models.memory import Memory, MemoryKey, MemoryUse, SummaryVersion
from talekeeper.storage.models.proposals import CardProposal
from talekeeper.storage.models.replies import ContextPlacement, InsightSnapshot
from talekeeper.storage.models.sharing import (
    AdventureInvite,
    AdventureMember,
    FeedEvent,
    Presence,
    TurnTicket,
)
from talekeeper.storage.models.story import Action, Adventure, Branch, StoryCard
from talekeeper.storage.models.world import (
    WorldBacklog,
    WorldEntity,
    WorldEvent,
    WorldReading,
)

__all__ = [
    "BackgroundJob",
    "ID",
    "LOCAL_USER",
    "NAMING",
    "Action",
    "Adventure",
    "AdventureInvite",
    "AdventureKnowledge",
    "AdventureMember",
    "AiCall",
    "ApiToken",
    "AuthSession",
    "Base",
    "Branch",
    "CardProposal",
    "ContextPlacement",
    "DerivedState",
    "FeedEvent",
    "InsightSnapshot",
    "LibraryPassage",
    "LibrarySource",
    "Memory",
    "MemoryKey",
    "MemoryUse",
    "Presence",
    "SignInCount",
    "StoryCard",
    "SummaryVersion",
    "TurnTicket",
    "User",
    "UserSetting",
    "UtcDateTime",
    "WorldBacklog",
    "WorldEntity",
    "WorldEvent",
    "WorldReading",
]
