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
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any

from talekeeper.core.errors import ConfigurationError
from talekeeper.services.endpoints.detect import DEFAULT_PORTS, parse_ports
from talekeeper.services.endpoints.models import ContextLayout
from talekeeper.setting_values import (
    ENV_PREFIX,
    ProxyNetwork,
    Setting,
    check_hosts,
    check_key,
    check_model,
    check_ports,
    check_proxies,
    check_url,
    check_world_model,
    host_names,
    proxy_networks,
)
from talekeeper.storage.dialect import complaint as database_url_complaint

EMBEDDED = "embedded"
EXTRACTIVE = "extractive"
RULES = "rules"  # the world read by patterns alone (TALEKEEPER_WORLD_MODEL)
NO_EMBEDDINGS = "none"
LOG_FILE = "talekeeper.log"  # in the data dir, where 'talekeeper play' logs by default
DEFAULT_CONTEXT_TOKENS = 4096  # used when neither the setting nor the model says otherwise


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
        check=check_url,
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
        check=check_key,
        server_owned=True,
    ),
    Setting(
        "model",
        str,
        EMBEDDED,
        "Narrator: a model name at the endpoint, or 'embedded' (in-process).",
        per_user=True,
        check=check_model,
    ),
    Setting(
        "summary_model",
        str,
        "",
        "Memories and Story Summary: a model name, 'embedded' or 'extractive' (no model). "
        "Empty: the narrator's model, or 'extractive' when that is 'embedded'.",
        per_user=True,
        check=check_model,
    ),
    Setting(
        "world_model",
        str,
        RULES,
        "World state: 'rules' (patterns, no model call) or a model at the endpoint that also "
        "reads each reply (one background call a turn) and writes card proposals' entries.",
        per_user=True,
        check=check_world_model,
    ),
    Setting(
        "embedding_model",
        str,
        EMBEDDED,
        "Embeddings: a model name at the endpoint, 'embedded' (in-process) or 'none' (bank off).",
        per_user=True,
        check=check_model,
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
    Setting(
        "threads",
        int,
        0,
        "CPU threads the embedded narrator and embedder use (llama.cpp's -t); 0: one per "
        "CPU the system reports. Fewer can be faster where other work shares the cores, or "
        "where the system counts each core twice (hyper-threading).",
        minimum=0,
        maximum=1024,
    ),
    Setting("host", str, "127.0.0.1", "Where 'talekeeper serve' listens."),
    Setting("port", int, 8000, "Port for 'talekeeper serve'.", minimum=1, maximum=65535),
    Setting(
        "allowed_hosts",
        str,
        "",
        "Host names the app answers to besides localhost, 127.0.0.1 and [::1], "
        "comma-separated; each is allowed with any port. Any other Host is refused.",
        check=check_hosts,
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
        check=check_proxies,
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
        check=check_ports,
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
    world_model: str
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
    threads: int
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
    if s.world_model != RULES:
        needs.append(("TALEKEEPER_WORLD_MODEL", s.world_model))
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
