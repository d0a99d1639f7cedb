"""Accounts mode: named accounts that sign in, their browser sessions and API tokens.

Invariants:

- Passwords are kept only as argon2id hashes (``passwords``), made and checked at most
  two at a time per process. Session ids and API tokens are random (256 bits) and kept
  only as their SHA-256: the raw value is returned once, to the cookie or to the person
  who made the token.
- An account is a user with a password. Names are 1 to 40 ASCII letters, digits, ``_``,
  ``.`` or ``-``, unique ignoring case; ``local`` is kept for local mode's user.
- The migration rule: while the only user is the passwordless local user (the row local
  mode plays as), the first administrator created takes over that row (a player never
  does: the local stories and saved settings are the operator's). It is renamed, given
  the password and the admin flag asked for, and keeps its id, so every adventure,
  setting and AI call record the local user had becomes that account's. Once any other
  user exists, an account is a new, empty row.
- Signing in is throttled per account name and client address together, with slower
  ceilings per account and per address that never refuse an address for what other
  addresses did (``throttle``; the counts are in the database, shared by every process);
  an unknown name and a wrong password fail alike, after the same work (``signin``).
- A browser session acts with every scope its account has (play, read, and admin for an
  administrator); a token only with its own scopes, and admin only while its account is
  an administrator (``tokens``). Disabling an account or changing its password signs out
  its browsers; a new password also revokes its tokens unless the one setting it keeps
  them; a disabled account's sessions and tokens sign no one in.
- An administrator manages accounts, never stories: ``admin`` answers with counts and sums
  only, and refuses to let an administrator disable themselves or drop their own admin
  flag, so a server always keeps an administrator who can sign in.
- Every function takes the caller's unit of work and never commits, except signing in
  (``authenticate``, ``login``) and the throttle, which take the database (a session
  factory) and run short units of their own; timestamps default to now and may be given
  (the tests do). ``hasher`` (argon2's cost) may be given too, and only the tests give a
  cheaper one.
"""

from talekeeper.services.accounts.admin import (
    OwnAccount,
    SessionInfo,
    UserUsage,
    account_by_id,
    reset_password,
    revoke_any_token,
    revoke_sessions,
    sessions_of,
    set_admin,
    set_user_disabled,
    tokens_of,
    usage,
)
from talekeeper.services.accounts.base import (
    MAX_PASSWORD_LENGTH,
    MIN_PASSWORD_LENGTH,
    NAME_MAX,
    SESSION_DAYS,
    Account,
    Principal,
    Scope,
    user_scopes,
)
from talekeeper.services.accounts.errors import (
    AccountDisabled,
    AccountError,
    BadName,
    LoginThrottled,
    NameTaken,
    UnknownUser,
    WeakPassword,
    WrongCredentials,
)
from talekeeper.services.accounts.passwords import (
    DEFAULT_HASHER,
    hash_password,
    needs_rehash,
    verify_password,
)
from talekeeper.services.accounts.signin import (
    Renewed,
    Verified,
    authenticate,
    login,
    logout,
    open_session,
    principal_for_session,
    renew_password,
    touch_session,
)
from talekeeper.services.accounts.throttle import LoginThrottle, Rule
from talekeeper.services.accounts.tokens import (
    DEFAULT_TOKEN_DAYS,
    TokenInfo,
    create_token,
    list_tokens,
    principal_for_token,
    revoke_token,
    touch_token,
)
from talekeeper.services.accounts.users import (
    PasswordSet,
    account_named,
    check_name,
    check_name_free,
    check_password,
    create_user,
    first_account_takes_over,
    has_accounts,
    list_users,
    set_disabled,
    set_password,
)

__all__ = [
    "DEFAULT_HASHER",
    "DEFAULT_TOKEN_DAYS",
    "MAX_PASSWORD_LENGTH",
    "MIN_PASSWORD_LENGTH",
    "NAME_MAX",
    "SESSION_DAYS",
    "Account",
    "AccountDisabled",
    "AccountError",
    "BadName",
    "LoginThrottle",
    "LoginThrottled",
    "NameTaken",
    "OwnAccount",
    "PasswordSet",
    "Principal",
    "Renewed",
    "Rule",
    "Scope",
    "SessionInfo",
    "TokenInfo",
    "UnknownUser",
    "UserUsage",
    "Verified",
    "WeakPassword",
    "WrongCredentials",
    "account_by_id",
    "account_named",
    "authenticate",
    "check_name",
    "check_name_free",
    "check_password",
    "create_token",
    "create_user",
    "first_account_takes_over",
    "has_accounts",
    "hash_password",
    "list_tokens",
    "list_users",
    "login",
    "logout",
    "needs_rehash",
    "open_session",
    "principal_for_session",
    "renew_password",
    "principal_for_token",
    "reset_password",
    "revoke_any_token",
    "revoke_sessions",
    "revoke_token",
    "sessions_of",
    "set_admin",
    "set_disabled",
    "set_password",
    "set_user_disabled",
    "tokens_of",
    "touch_session",
    "touch_token",
    "usage",
    "user_scopes",
    "verify_password",
]
