"""The one registry of settings.

Invariants:

- Every setting is declared once in ``REGISTRY`` with its type, default, help
  text and (for per-user ones) whether a user may override it. The
  configuration table of docs/configuration.md lists every one (a test checks).
- Environment variables ``TALEKEEPER_<KEY>`` give the process defaults;
  per-user rows override the per-user settings for that user only.
- Parsing never guesses: a value that does not fit raises
  ``ConfigurationError`` naming the variable and what it accepts, so a bad
  value stops start-up with a readable message instead of failing later.
- A setting whose kind is a ``StrEnum`` accepts exactly its members' values and
  is read as the member. ``auth`` and ``user_endpoints`` are server-wide: who
  may sign in, and what a signed-in user may point the server at, are never a
  user's own choice.
"""

from __future__ import annotations

import dataclasses
import functools
import ipaddress
import math
import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from talekeeper.core.errors import ConfigurationError
from talekeeper.providers.base import without_userinfo
from talekeeper.services.context import ContextLayout
from talekeeper.services.detect import DEFAULT_PORTS, parse_ports
from talekeeper.storage.dialect import complaint as database_url_complaint

ENV_PREFIX = "TALEKEEPER_"
EMBEDDED = "embedded"
EXTRACTIVE = "extractive"
NO_EMBEDDINGS = "none"
LOG_FILE = "talekeeper.log"  # in the data dir, where 'talekeeper play' logs by default
DEFAULT_CONTEXT_TOKENS = 4096  # used when neither the setting nor the model says otherwise
# A URL, a model name or a key: anything longer is a paste gone wrong, and it would be
# stored and sent with every model call.
TEXT_MAX = 2_000
# A model name, or an endpoint URL without its credentials, is kept with every AI call and
# every memory written, in columns of this many characters (PostgreSQL enforces them).
STORED_MAX = 255


class AuthMode(StrEnum):
    """Who the server serves: one implicit local user, or named accounts that sign in."""

    NONE = "none"
    ACCOUNTS = "accounts"


class LogTo(StrEnum):
    """Where an interactive command's log goes, so that the terminal shows only the story."""

    FILE = "file"
    STDERR = "stderr"


class UserEndpoints(StrEnum):
    """In accounts mode, whether a user may point their own settings at a model endpoint."""

    DENY = "deny"
    ALLOW = "allow"


def default_data_dir() -> str:
    """A per-user data folder, following the XDG convention."""
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return str(Path(base) / "talekeeper")


@dataclass(frozen=True)
class Setting:
    key: str
    kind: type
    default: Any
    help: str
    per_user: bool = False
    secret: bool = False
    choices: tuple[str, ...] = ()
    minimum: float | None = None
    maximum: float | None = None
    check: Callable[[Any], str | None] | None = None  # returns a complaint, or None
    url: bool = False  # a URL, which may carry a password: shown without its credentials
    # Per user where each player brings their own (local mode), but the server's alone in
    # accounts mode: a player may not point the server at a URL of their choosing.
    server_owned: bool = False

    @property
    def env(self) -> str:
        return ENV_PREFIX + self.key.upper()

    def accepts(self) -> str:
        """Human words for what this setting accepts, used in every error message."""
        if self.choices:
            return "one of " + ", ".join(repr(c) for c in self.choices)
        if self.kind is int or self.kind is float:
            noun = "a whole number" if self.kind is int else "a number"
            if self.minimum is not None and self.maximum is not None:
                return f"{noun} from {self.minimum:g} to {self.maximum:g}"
            if self.minimum is not None:
                return f"{noun} of at least {self.minimum:g}"
            return noun
        return "text"

    def parse(self, raw: Any) -> Any:
        """Turn a raw value (env string or JSON value) into this setting's type, or complain."""
        value: Any
        try:
            if self.kind is int:
                if isinstance(raw, bool) or (isinstance(raw, float) and not raw.is_integer()):
                    raise ValueError
                value = int(str(raw).strip()) if isinstance(raw, str) else int(raw)
            elif self.kind is float:
                if isinstance(raw, bool):
                    raise ValueError
                value = float(str(raw).strip()) if isinstance(raw, str) else float(raw)
                if not math.isfinite(value):  # NaN passes every range check; refuse it here
                    raise ValueError
            else:
                if not isinstance(raw, str):
                    raise ValueError
                value = raw.strip()
        except (TypeError, ValueError):
            raise self.complaint(raw) from None
        if issubclass(self.kind, StrEnum):
            if value not in self.choices:
                raise self.complaint(raw)
            return self.kind(value)
        if isinstance(value, str) and len(value) > TEXT_MAX:
            raise ConfigurationError(
                f"{self.env} ('{self.key}') is {len(value):,} characters; the limit for a "
                f"setting is {TEXT_MAX:,}."
            )
        if self.choices and value not in self.choices:
            raise self.complaint(raw)
        if self.minimum is not None and value < self.minimum:
            raise self.complaint(raw)
        if self.maximum is not None and value > self.maximum:
            raise self.complaint(raw)
        if self.check is not None and value != "":
            problem = self.check(value)
            if problem:
                raise ConfigurationError(f"{self.env}={self.shown(raw)} is not usable: {problem}.")
        return value

    def complaint(self, raw: Any) -> ConfigurationError:
        return ConfigurationError(
            f"{self.env}={self.shown(raw)} is not valid: it accepts {self.accepts()}."
        )

    def shown(self, raw: Any) -> str:
        """The value as an error may quote it: never a secret, never pages of text."""
        if self.secret:
            return "(the value given)"
        if self.url and isinstance(raw, str):
            raw = without_userinfo(raw)  # a password in a URL is as secret as the key
        text = repr(raw)
        return text if len(text) <= 80 else text[:77] + "..."


def _check_url(value: str) -> str | None:
    example = "an http:// or https:// URL such as http://127.0.0.1:11434/v1"
    if not value.startswith(("http://", "https://")):
        return f"it must be {example}"
    try:
        parts = urlsplit(value)
        parts.port  # noqa: B018 - reading it checks the range (ValueError)
    except ValueError as exc:
        return f"it is not a valid URL ({exc}); it must be {example}"
    if not parts.hostname or any(c.isspace() for c in value):
        return f"it has no host name; it must be {example}"
    stored = len(without_userinfo(value).rstrip("/"))
    if stored > STORED_MAX:
        return f"it is {stored:,} characters (without any credentials); the limit is {STORED_MAX}"
    return None


def _check_model(value: str) -> str | None:
    if len(value) > STORED_MAX:
        return f"a model name is at most {STORED_MAX} characters; this one has {len(value):,}"
    return None


_HOST_NAME = re.compile(
    r"[a-z0-9_]([a-z0-9_-]{0,61}[a-z0-9_])?(\.[a-z0-9_]([a-z0-9_-]{0,61}[a-z0-9_])?)*"
)
_HOSTS_EXAMPLE = "names such as talekeeper.lan or 192.168.1.20, separated by commas"


def host_name(entry: str) -> str:
    """One host name as a ``Host`` header spells it, lower case (an IPv6 address in
    brackets, compressed); ``ValueError`` with a reason when it is not one.

    A name is allowed with any port, so an entry with a port is refused rather than
    read as a rule about ports.
    """
    shown = entry.strip()
    name = shown.lower()
    bare = name[1:-1] if name.startswith("[") and name.endswith("]") else name
    if ":" in bare:
        try:
            return f"[{ipaddress.IPv6Address(bare).compressed}]"
        except ValueError:
            pass
        head, _, tail = name.rpartition(":")
        if tail.isdigit() and head and "/" not in head:
            raise ValueError(
                f"{shown!r} has a port; a name is allowed with any port, so list {head!r}"
            ) from None
        raise ValueError(
            f"{shown!r} is not a host name: give {_HOSTS_EXAMPLE}, without a scheme or path"
        ) from None
    if name == bare and len(name) <= 253 and _HOST_NAME.fullmatch(name):
        return name
    raise ValueError(f"{shown!r} is not a host name: give {_HOSTS_EXAMPLE}")


def host_names(value: str) -> tuple[str, ...]:
    """The names of a comma-separated list (empty entries skipped); ``ValueError`` names
    the first entry that is not a host name."""
    return tuple(host_name(entry) for entry in value.split(",") if entry.strip())


def _refusal_of(parse: Callable[[str], object]) -> Callable[[str], str | None]:
    """A setting's check from its parser: the parser's ``ValueError`` is the complaint."""

    def check(value: str) -> str | None:
        try:
            parse(value)
        except ValueError as exc:
            return str(exc)
        return None

    return check


ProxyNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network
_PROXIES_EXAMPLE = "addresses or networks such as 127.0.0.1, ::1 or 10.0.0.0/8"


@functools.lru_cache(maxsize=8)
def proxy_networks(value: str) -> tuple[ProxyNetwork, ...]:
    """The networks of a comma-separated list of addresses and networks (empty entries
    skipped); ``ValueError`` names the first entry that is neither."""
    found: list[ProxyNetwork] = []
    for entry in value.split(","):
        if not entry.strip():
            continue
        try:
            found.append(ipaddress.ip_network(entry.strip(), strict=False))
        except ValueError:
            raise ValueError(
                f"{entry.strip()!r} is not an address or a network: give {_PROXIES_EXAMPLE}, "
                "separated by commas"
            ) from None
    return tuple(found)


_check_hosts = _refusal_of(host_names)
_check_ports = _refusal_of(parse_ports)
_check_proxies = _refusal_of(proxy_networks)


def _check_key(value: str) -> str | None:
    if not (value.isascii() and value.isprintable()):
        return "an API key is sent in an HTTP header, so it must be printable ASCII"
    return None


REGISTRY: tuple[Setting, ...] = (
    Setting("data_dir", str, None, "Where the SQLite database and caches live."),
    Setting(
        "database_url",
        str,
        "",
        "SQLAlchemy URL; overrides the data dir's SQLite file (e.g. postgresql+psycopg://...).",
        check=database_url_complaint,
        url=True,
    ),
    Setting(
        "endpoint_url",
        str,
        "",
        "Base URL of an OpenAI-compatible API (ending in /v1). Empty: no endpoint.",
        per_user=True,
        check=_check_url,
        url=True,
        server_owned=True,
    ),
    Setting(
        "api_key",
        str,
        "",
        "Bearer key for that endpoint, if it needs one.",
        True,
        secret=True,
        check=_check_key,
        server_owned=True,
    ),
    Setting(
        "model",
        str,
        EMBEDDED,
        "Narrator: a model name at the endpoint, or 'embedded' (in-process).",
        per_user=True,
        check=_check_model,
    ),
    Setting(
        "summary_model",
        str,
        "",
        "Memories and Story Summary: a model name, 'embedded' or 'extractive' (no model). "
        "Empty: the narrator's model, or 'extractive' when that is 'embedded'.",
        per_user=True,
        check=_check_model,
    ),
    Setting(
        "embedding_model",
        str,
        EMBEDDED,
        "Embeddings: a model name at the endpoint, 'embedded' (in-process) or 'none' (bank off).",
        per_user=True,
        check=_check_model,
    ),
    Setting(
        "api_mode",
        str,
        "chat",
        "'chat' (messages) or 'completion' (one prompt string).",
        per_user=True,
        choices=("chat", "completion"),
    ),
    Setting(
        "context_tokens",
        int,
        0,
        "The model's context length in tokens; 0 uses the model's own, else 4096.",
        per_user=True,
        minimum=0,
        maximum=1_048_576,
    ),
    Setting(
        "reply_tokens",
        int,
        200,
        "Reply length in tokens.",
        per_user=True,
        minimum=1,
        maximum=8192,
    ),
    Setting(
        "temperature",
        float,
        0.8,
        "Sampling temperature for the narrator.",
        per_user=True,
        minimum=0,
        maximum=2,
    ),
    Setting("top_p", float, 0.95, "Nucleus sampling (top-p).", True, minimum=0.01, maximum=1),
    Setting(
        "timeout",
        float,
        120.0,
        "Seconds to wait for the endpoint before giving up.",
        per_user=True,
        minimum=0.1,
        maximum=3600,
    ),
    Setting(
        "memory_top_k",
        int,
        5,
        "How many memories are retrieved into each turn's context.",
        per_user=True,
        minimum=0,
        maximum=50,
    ),
    Setting(
        "knowledge_top_k",
        int,
        3,
        "How many knowledge library passages are retrieved into each turn's context.",
        per_user=True,
        minimum=0,
        maximum=20,
    ),
    Setting(
        "context_layout",
        ContextLayout,
        ContextLayout.CACHE,
        "Where the context puts what changes each turn. 'cache': memories, cards, knowledge "
        "and the Author's Note float near the end and the history drops its oldest actions "
        "in chunks, so a local model server re-reads only the end of the prompt. 'classic': "
        "every section above the history, which drops one action at a time.",
        per_user=True,
        choices=tuple(layout.value for layout in ContextLayout),
    ),
    Setting(
        "bank_capacity",
        int,
        200,
        "How many memories the Memory Bank keeps retrievable.",
        per_user=True,
        minimum=1,
        maximum=100_000,
    ),
    Setting("host", str, "127.0.0.1", "Where 'talekeeper serve' listens."),
    Setting("port", int, 8000, "Port for 'talekeeper serve'.", minimum=1, maximum=65535),
    Setting(
        "allowed_hosts",
        str,
        "",
        "Host names the app answers to besides localhost, 127.0.0.1 and [::1], "
        "comma-separated; each is allowed with any port. Any other Host is refused.",
        check=_check_hosts,
    ),
    Setting(
        "trusted_proxies",
        str,
        "",
        "Addresses or networks of the reverse proxies in front of the app (e.g. 127.0.0.1 or "
        "10.0.0.0/8), comma-separated. Only a request from one of them has its "
        "X-Forwarded-For and X-Forwarded-Proto believed: the client is the right-most "
        "address there that is not a trusted proxy. Empty: none, and every client is the "
        "address it connects from.",
        check=_check_proxies,
    ),
    Setting(
        "auth",
        AuthMode,
        AuthMode.NONE,
        "'none': one local user, no login (loopback only). 'accounts': named accounts sign "
        "in (add them with 'talekeeper users add').",
        choices=tuple(mode.value for mode in AuthMode),
    ),
    Setting(
        "user_endpoints",
        UserEndpoints,
        UserEndpoints.DENY,
        "Accounts mode: 'deny' keeps every user on the server's models and endpoint; 'allow' "
        "lets a user set their own endpoint URL and API key.",
        choices=tuple(rule.value for rule in UserEndpoints),
    ),
    Setting(
        "log_level",
        str,
        "info",
        "Log verbosity.",
        choices=("debug", "info", "warning", "error"),
    ),
    Setting(
        "log_to",
        LogTo,
        LogTo.FILE,
        "Where 'talekeeper play' writes its log: 'file' (talekeeper.log in the data dir, at "
        "TALEKEEPER_LOG_LEVEL) or 'stderr' (warnings and errors only). The terminal shows only "
        "the story either way.",
        choices=tuple(where.value for where in LogTo),
    ),
    Setting(
        "detect_ports",
        str,
        DEFAULT_PORTS,
        "Ports of 127.0.0.1 asked for local model servers (Ollama 11434, LM Studio 1234, "
        "llama.cpp 8080, KoboldCpp 5001, vLLM 8000), comma-separated; never Talekeeper's own. "
        "Empty: never ask.",
        check=_check_ports,
    ),
)

BY_KEY: dict[str, Setting] = {s.key: s for s in REGISTRY}
PER_USER: tuple[str, ...] = tuple(s.key for s in REGISTRY if s.per_user)
# What a user may not set for themselves where the endpoint is the server's (accounts mode).
SERVER_OWNED: frozenset[str] = frozenset(s.key for s in REGISTRY if s.server_owned)


def per_user_setting(key: str) -> Setting:
    """The per-user setting called ``key``, or an error listing the ones there are."""
    setting = BY_KEY.get(key)
    if setting is None or not setting.per_user:
        raise ConfigurationError(
            f"'{key}' is not a per-user setting; the per-user settings are: "
            + ", ".join(PER_USER)
            + "."
        )
    return setting


@dataclass(frozen=True, kw_only=True)
class Settings:
    """Resolved, validated values. Build with ``load_settings``, which gives every field
    (``REGISTRY`` holds each setting's one default); never mutate."""

    data_dir: str
    database_url: str = field(repr=False)  # a PostgreSQL URL carries a password
    endpoint_url: str = field(repr=False)  # it may carry a password
    api_key: str = field(repr=False)
    model: str
    summary_model: str
    embedding_model: str
    api_mode: str
    context_tokens: int
    reply_tokens: int
    temperature: float
    top_p: float
    timeout: float
    memory_top_k: int
    bank_capacity: int
    knowledge_top_k: int
    context_layout: ContextLayout
    host: str
    port: int
    allowed_hosts: str
    trusted_proxies: str
    auth: AuthMode
    user_endpoints: UserEndpoints
    log_level: str
    log_to: LogTo
    detect_ports: str

    def __post_init__(self) -> None:
        _check_coherent(self)

    @property
    def resolved_database_url(self) -> str:
        if self.database_url:
            return self.database_url
        return "sqlite:///" + str(Path(self.data_dir) / "talekeeper.db")

    @property
    def extra_host_names(self) -> tuple[str, ...]:
        """``allowed_hosts`` as normalized names (validated when the setting was read)."""
        return host_names(self.allowed_hosts)

    @property
    def trusted_proxy_networks(self) -> tuple[ProxyNetwork, ...]:
        """``trusted_proxies`` as networks (validated when the setting was read)."""
        return proxy_networks(self.trusted_proxies)

    @property
    def detect_port_list(self) -> tuple[int, ...]:
        """``detect_ports`` as numbers (validated when the setting was read)."""
        return parse_ports(self.detect_ports)

    @property
    def log_file(self) -> Path:
        return Path(self.data_dir) / LOG_FILE

    @property
    def resolved_summary_model(self) -> str:
        if self.summary_model:
            return self.summary_model
        return EXTRACTIVE if self.model == EMBEDDED else self.model

    def with_overrides(self, overrides: Mapping[str, Any]) -> Settings:
        """These settings with per-user values applied (each parsed and validated)."""
        changes: dict[str, Any] = {}
        for key, raw in overrides.items():
            changes[key] = per_user_setting(key).parse(raw)
        return dataclasses.replace(self, **changes)

    def public(self) -> dict[str, Any]:
        """The per-user values as a client may see them: secrets are never sent back."""
        out: dict[str, Any] = {}
        for key in PER_USER:
            value = getattr(self, key)
            if BY_KEY[key].secret:
                out[key + "_set"] = bool(value)
            else:
                out[key] = value
        out["summary_model_resolved"] = self.resolved_summary_model
        return out


def _check_coherent(s: Settings) -> None:
    """Cross-setting rules: a named model needs an endpoint to live at."""
    if s.endpoint_url:
        return
    needs = []
    if s.model != EMBEDDED:
        needs.append(("TALEKEEPER_MODEL", s.model))
    if s.summary_model not in ("", EMBEDDED, EXTRACTIVE):
        needs.append(("TALEKEEPER_SUMMARY_MODEL", s.summary_model))
    if s.embedding_model not in (EMBEDDED, NO_EMBEDDINGS):
        needs.append(("TALEKEEPER_EMBEDDING_MODEL", s.embedding_model))
    if needs:
        named = ", ".join(f"{env}={value!r}" for env, value in needs)
        raise ConfigurationError(
            f"{named} names a model at an endpoint, but TALEKEEPER_ENDPOINT_URL is empty: "
            "set it to your server's base URL (e.g. http://127.0.0.1:11434/v1 for Ollama), "
            "or use 'embedded'."
        )


def load_settings(environ: Mapping[str, str] | None = None) -> Settings:
    """Read every ``TALEKEEPER_*`` variable; unknown ``TALEKEEPER_`` names are rejected too."""
    env = os.environ if environ is None else environ
    known = {s.env for s in REGISTRY}
    unknown = sorted(k for k in env if k.startswith(ENV_PREFIX) and k not in known)
    if unknown:
        raise ConfigurationError(
            f"Unknown setting {unknown[0]}: the settings are " + ", ".join(sorted(known)) + "."
        )
    values: dict[str, Any] = {}
    for setting in REGISTRY:
        raw = env.get(setting.env)
        if raw is None or raw == "":
            values[setting.key] = setting.default
        else:
            values[setting.key] = setting.parse(raw)
    if values["data_dir"] is None:
        values["data_dir"] = default_data_dir()
    return Settings(**values)
