"""A setting's declaration (``Setting``: its type, default, bounds and check, and how it
parses and quotes a value) and what a value may be: the checks that name what is wrong
with one, and the parsers of the list-valued settings (host names, proxy networks).

A check returns a complaint a person can act on, or None; a parser raises ``ValueError``
with one. Both are pure: they read nothing but the value.
"""

from __future__ import annotations

import functools
import ipaddress
import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from typing import Any
from urllib.parse import urlsplit

from talekeeper.core.errors import ConfigurationError
from talekeeper.providers.base import without_userinfo
from talekeeper.services.endpoints.detect import parse_ports

# A model name, or an endpoint URL without its credentials, is kept with every AI call and
# every memory written, in columns of this many characters (PostgreSQL enforces them).
STORED_MAX = 255
ENV_PREFIX = "TALEKEEPER_"
# A URL, a model name or a key: anything longer is a paste gone wrong, and it would be
# stored and sent with every model call.
TEXT_MAX = 2_000


def check_url(value: str) -> str | None:
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


def check_model(value: str) -> str | None:
    if len(value) > STORED_MAX:
        return f"a model name is at most {STORED_MAX} characters; this one has {len(value):,}"
    return None


def check_world_model(value: str) -> str | None:
    if value == "embedded":
        return (
            "the embedded model is too small to read the world reliably: use 'rules' (patterns,"
            " no model call) or a model name at the endpoint"
        )
    return check_model(value)


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


def refusal_of(parse: Callable[[str], object]) -> Callable[[str], str | None]:
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


check_hosts = refusal_of(host_names)
check_ports = refusal_of(parse_ports)
check_proxies = refusal_of(proxy_networks)


def check_key(value: str) -> str | None:
    if not (value.isascii() and value.isprintable()):
        return "an API key is sent in an HTTP header, so it must be printable ASCII"
    return None


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
