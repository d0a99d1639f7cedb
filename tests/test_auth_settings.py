"""The accounts settings: ``auth`` and ``user_endpoints`` are StrEnums read exactly, and are
the server's alone (no user can override them)."""

from __future__ import annotations

import pytest

from talekeeper.core.errors import ConfigurationError
from talekeeper.settings import PER_USER, AuthMode, UserEndpoints, load_settings


def test_local_mode_and_no_user_endpoints_by_default() -> None:
    settings = load_settings({"TALEKEEPER_DATA_DIR": "/tmp/x"})
    assert settings.auth is AuthMode.NONE
    assert settings.user_endpoints is UserEndpoints.DENY


def test_the_values_are_read_as_their_members() -> None:
    settings = load_settings(
        {"TALEKEEPER_AUTH": " accounts ", "TALEKEEPER_USER_ENDPOINTS": "allow"}
    )
    assert settings.auth is AuthMode.ACCOUNTS
    assert settings.user_endpoints is UserEndpoints.ALLOW


@pytest.mark.parametrize(
    ("name", "value", "says"),
    [
        ("TALEKEEPER_AUTH", "Accounts", "one of 'none', 'accounts'"),
        ("TALEKEEPER_AUTH", "password", "one of 'none', 'accounts'"),
        ("TALEKEEPER_USER_ENDPOINTS", "yes", "one of 'deny', 'allow'"),
    ],
)
def test_a_bad_value_names_the_setting_and_its_values(name: str, value: str, says: str) -> None:
    with pytest.raises(ConfigurationError) as refused:
        load_settings({name: value})
    assert refused.value.message == f"{name}={value!r} is not valid: it accepts {says}."


@pytest.mark.parametrize("key", ["auth", "user_endpoints"])
def test_no_user_can_override_them(key: str) -> None:
    assert key not in PER_USER
    base = load_settings({"TALEKEEPER_DATA_DIR": "/tmp/x"})
    with pytest.raises(ConfigurationError, match="not a per-user setting"):
        base.with_overrides({key: "accounts" if key == "auth" else "allow"})
