"""The accounts settings: ``auth`` and ``user_endpoints`` are StrEnums read exactly;
``trusted_proxies`` is a list of addresses and networks, empty (none) by default; all are the
server's alone (no user can override them)."""

from __future__ import annotations

import ipaddress

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


def test_no_proxy_is_trusted_by_default_and_a_list_is_read_as_networks() -> None:
    assert load_settings({"TALEKEEPER_DATA_DIR": "/tmp/x"}).trusted_proxy_networks == ()
    settings = load_settings({"TALEKEEPER_TRUSTED_PROXIES": " 127.0.0.1, ::1,10.1.2.3/8 ,"})
    assert settings.trusted_proxy_networks == (
        ipaddress.ip_network("127.0.0.1/32"),
        ipaddress.ip_network("::1/128"),
        ipaddress.ip_network("10.0.0.0/8"),
    )


@pytest.mark.parametrize("value", ["proxy.lan", "10.0.0.0/33", "127.0.0.1 ::1"])
def test_a_trusted_proxy_that_is_no_address_is_refused_by_name(value: str) -> None:
    with pytest.raises(ConfigurationError) as refused:
        load_settings({"TALEKEEPER_TRUSTED_PROXIES": f"127.0.0.1,{value}"})
    assert refused.value.message.startswith("TALEKEEPER_TRUSTED_PROXIES=")
    assert f"{value!r} is not an address or a network" in refused.value.message


@pytest.mark.parametrize("key", ["auth", "user_endpoints", "trusted_proxies"])
def test_no_user_can_override_them(key: str) -> None:
    assert key not in PER_USER
    base = load_settings({"TALEKEEPER_DATA_DIR": "/tmp/x"})
    with pytest.raises(ConfigurationError, match="not a per-user setting"):
        base.with_overrides({key: {"auth": "accounts", "user_endpoints": "allow"}.get(key, "::1")})
