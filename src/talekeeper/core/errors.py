"""One error hierarchy for the whole application.

Every error a user can meet carries a ``code`` (stable, machine-readable), a
``message`` that says what went wrong and what to do next, and the HTTP status
family it maps to. The web layer maps these to responses in one place
(``talekeeper.web.errors``); the CLI prints the message. Nothing below the
entry points turns an error into a status code.
"""

from __future__ import annotations


class TalekeeperError(Exception):
    """Base of every error with a message meant for the player."""

    status: int = 500
    code: str = "internal_error"

    def __init__(self, message: str, *, code: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        if code is not None:
            self.code = code


class InvalidInput(TalekeeperError):
    """The client sent something we cannot accept; the message says what to fix."""

    status = 400
    code = "invalid_input"


class NotFound(TalekeeperError):
    status = 404
    code = "not_found"


class Forbidden(TalekeeperError):
    """The user may see the thing but not do this to it (a viewer of a shared adventure
    acting in it); the message says who may."""

    status = 403
    code = "forbidden"


class Conflict(TalekeeperError):
    """The request is valid but not in the story's current state (e.g. retry of an old action)."""

    status = 409
    code = "conflict"


class ConfigurationError(TalekeeperError):
    """A setting has a value we cannot use. Raised at start-up or when a user saves settings."""

    status = 400
    code = "invalid_setting"


class ModelUnavailable(TalekeeperError):
    """A model that ships as a package is not installed or cannot load."""

    status = 503
    code = "model_unavailable"


class ProviderError(TalekeeperError):
    """A model endpoint failed. Always names the endpoint and suggests a next step.

    Mapped to 502 (bad gateway): the client's request was fine, the model
    behind us was not.
    """

    status = 502
    code = "provider_error"


class ProviderUnreachable(ProviderError):
    code = "provider_unreachable"


class ProviderAuthError(ProviderError):
    code = "provider_auth"


class ProviderModelNotFound(ProviderError):
    code = "model_not_found"


class ProviderTimeout(ProviderError):
    status = 504
    code = "provider_timeout"


class ProviderProtocolError(ProviderError):
    """The endpoint answered outside the OpenAI protocol (bad JSON, a cut stream)."""

    code = "provider_protocol"


class DatabaseBusy(TalekeeperError):
    """The database stayed locked by other work for longer than we wait; nothing was
    changed. Mapped to 503 with ``Retry-After`` (seconds): the request can simply be sent
    again."""

    status = 503
    code = "database_busy"
    retry_after = 5
