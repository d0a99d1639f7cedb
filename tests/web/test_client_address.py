"""Who a request comes from (``web/auth.py``): the peer, unless the peer is a trusted proxy;
then the right-most address of ``X-Forwarded-For`` that is not a trusted proxy. Pure: ASGI
scopes built here, no app."""

from __future__ import annotations

from typing import Any

import pytest

from talekeeper.setting_values import proxy_networks
from talekeeper.web.auth import client_address, client_scheme

TRUSTED = proxy_networks("10.0.0.0/8, 127.0.0.1, ::1")


def scope(peer: str | None, *headers: tuple[str, str], scheme: str = "http") -> dict[str, Any]:
    return {
        "type": "http",
        "scheme": scheme,
        "client": None if peer is None else (peer, 50000),
        "headers": [(k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in headers],
    }


def xff(value: str) -> tuple[str, str]:
    return ("X-Forwarded-For", value)


@pytest.mark.parametrize(
    ("peer", "headers", "client"),
    [
        # no trusted proxy: the header is never read, on loopback as anywhere
        ("203.0.113.5", [xff("192.0.2.1")], "203.0.113.5"),
        ("::ffff:203.0.113.5", [], "203.0.113.5"),
        # from a trusted proxy: the hop it added
        ("10.0.0.2", [xff("192.0.2.1")], "192.0.2.1"),
        ("10.0.0.2", [xff("6.6.6.6, 192.0.2.1")], "192.0.2.1"),  # the left is the client's
        ("10.0.0.2", [xff("192.0.2.1, 10.0.0.9")], "192.0.2.1"),  # proxies are passed over
        ("10.0.0.2", [xff("192.0.2.1"), xff("10.0.0.9")], "192.0.2.1"),  # several headers
        ("10.0.0.2", [xff("[2001:db8::7]:443")], "2001:db8::7"),
        ("10.0.0.2", [xff("192.0.2.1:5555")], "192.0.2.1"),
        ("10.0.0.2", [xff("garbage, 10.0.0.9")], "10.0.0.9"),  # the proxy that reported it
        ("10.0.0.2", [xff("")], "10.0.0.2"),
        ("10.0.0.2", [], "10.0.0.2"),
        ("10.0.0.2", [xff("10.0.0.3, 10.0.0.4")], "10.0.0.3"),  # all proxies: the farthest
        ("::1", [xff("192.0.2.1")], "192.0.2.1"),
        # not an address at all (a test client, a socket): as it is
        ("testclient", [xff("192.0.2.1")], "testclient"),
        (None, [xff("192.0.2.1")], "unknown"),
    ],
)
def test_the_client_is_the_peer_or_what_a_trusted_proxy_reports(
    peer: str | None, headers: list[tuple[str, str]], client: str
) -> None:
    assert client_address(scope(peer, *headers), TRUSTED) == client


def test_with_no_trusted_proxy_nothing_a_client_sends_moves_it() -> None:
    forged = scope("127.0.0.1", xff("192.0.2.1"), ("X-Forwarded-Proto", "https"))
    assert client_address(forged, ()) == "127.0.0.1"
    assert client_scheme(forged, ()) == "http"


@pytest.mark.parametrize(
    ("peer", "proto", "scheme"),
    [
        ("10.0.0.2", "https", "https"),
        ("10.0.0.2", "http, https", "https"),  # the last proxy's word
        ("10.0.0.2", "gopher", "http"),
        ("203.0.113.5", "https", "http"),
    ],
)
def test_the_scheme_is_a_trusted_proxys_word_or_the_connections(
    peer: str, proto: str, scheme: str
) -> None:
    assert client_scheme(scope(peer, ("X-Forwarded-Proto", proto)), TRUSTED) == scheme
