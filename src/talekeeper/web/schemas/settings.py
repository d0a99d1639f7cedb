"""What the settings page reads: the per-user settings, the endpoint's models, the local
model servers and the connection test.

- A setting's value is a JSON scalar (text, a number or true/false): the settings'
  values are free-form only in which keys there are (one per per-user setting, a
  secret's as ``<key>_set``), never in what a value is.
- A connection test reads ``services.endpoints.diagnostics.ConnectionTest``; each check is one of
  its outcomes, with only that outcome's keys: a reply has ``text`` and ``tokens_out``
  (``null`` when the server did not count them) and an ``error`` only when blank; a
  failure has ``error``; no embedder has ``note``.
"""

from __future__ import annotations

from talekeeper.services.endpoints.detect import ServerKind
from talekeeper.web.schemas.common import Out, sometimes

# bool before int: a union tries each in order, and true must stay true, not 1.
SettingValue = str | bool | int | float


class SavedSettingsOut(Out):
    values: dict[str, SettingValue]  # no key, and an endpoint URL without its credentials
    overridden: list[str]  # the keys the player has set


class SpecialValueOut(Out):
    value: str  # a value of a model setting that is not a model at the endpoint
    means: str


class SettingOut(Out):
    """One per-user setting described: what it takes and the server's value."""

    key: str
    env: str
    type: str  # the Python type's name: str, int or float
    help: str
    accepts: str  # human words for what it takes
    choices: list[str]
    secret: bool
    minimum: int | float | None
    maximum: int | float | None
    default: SettingValue | None  # a secret's is never said
    names_model: bool
    special: list[SpecialValueOut]


class SettingsOut(SavedSettingsOut):
    settings: list[SettingOut]


class EndpointModelsOut(Out):
    endpoint: str  # the URL asked, without its credentials
    models: list[str]
    error: str | None
    latency_ms: float | None  # null when there was no endpoint to ask


class LocalServerOut(Out):
    url: str  # the endpoint URL to save, ending in /v1
    kind: ServerKind
    models: list[str]


class NarratorReplyOut(Out):
    model: str
    ok: bool
    text: str
    latency_ms: float
    tokens_out: int | None
    error: str | None = sometimes()  # only for blank text


class CheckFailedOut(Out):
    model: str
    ok: bool
    error: str
    latency_ms: float


class EmbeddingFailedOut(Out):
    """``CheckFailedOut`` with its keys in the order the embedding's other outcomes have."""

    ok: bool
    model: str
    error: str
    latency_ms: float


class EmbeddedOut(Out):
    ok: bool
    model: str
    dimensions: int
    latency_ms: float


class EmbeddingOffOut(Out):
    ok: bool
    model: str
    note: str


class ConnectionTestOut(Out):
    # A union picks the member that reads the most fields from the outcome: each outcome
    # fits only its own model (a blank reply also fits CheckFailedOut, with fewer fields).
    narrator: NarratorReplyOut | CheckFailedOut
    embedding: EmbeddedOut | EmbeddingFailedOut | EmbeddingOffOut
    ok: bool
