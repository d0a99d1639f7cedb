"""The errors of accounts. Each says what to do next; ``status`` is the HTTP answer the web
layer gives it (400 bad input, 401 not signed in, 404 no such account, 409 name taken, 429
too many tries)."""

from __future__ import annotations

import math

from talekeeper.core.errors import TalekeeperError


class AccountError(TalekeeperError):
    status = 400
    code = "account_error"


class BadName(AccountError):
    code = "bad_name"


class WeakPassword(AccountError):
    code = "weak_password"


class NameTaken(AccountError):
    status = 409
    code = "name_taken"


class UnknownUser(AccountError):
    status = 404
    code = "unknown_user"


class WrongCredentials(AccountError):
    """The name or the password is wrong; which one is never said."""

    status = 401
    code = "wrong_credentials"

    def __init__(self) -> None:
        super().__init__("Wrong name or password: check both and sign in again.")


class AccountDisabled(AccountError):
    status = 401
    code = "account_disabled"

    def __init__(self, name: str) -> None:
        super().__init__(
            f"The account {name!r} is disabled: ask an administrator to enable it again."
        )


class LoginThrottled(AccountError):
    """Too many failed sign-ins for an account or from an address; ``retry_after`` is the
    wait in whole seconds (the web sends it as ``Retry-After``)."""

    status = 429
    code = "login_throttled"

    def __init__(self, retry_after: int) -> None:
        self.retry_after = max(1, retry_after)
        super().__init__(
            "Too many failed sign-ins for this account or from this address: wait "
            f"{wait_words(self.retry_after)} before trying again."
        )


def wait_words(seconds: int) -> str:
    if seconds < 90:
        return f"{seconds} second{'s' if seconds != 1 else ''}"
    return f"{math.ceil(seconds / 60)} minutes"
