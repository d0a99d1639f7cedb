"""Serving: ``serve`` (the web app and the JSON API) and ``detect`` (the model servers on
this machine).

Local mode has no login, so ``serve`` binds a loopback address only; a wider bind is
refused (exit status 2) before anything starts. The one-time setup link of an accounts
server with no account yet is printed on the console, never logged.
"""

from __future__ import annotations

import argparse
import asyncio
import ipaddress
import json
import logging
import shlex
import sys
from collections.abc import Callable

from talekeeper import __version__
from talekeeper.settings import AuthMode, Settings


def _address(host: str) -> tuple[ipaddress.IPv4Address | ipaddress.IPv6Address | None, str]:
    """``host`` as an address (None for a name), and as it is written in a URL."""
    bare = host.strip().lower().removeprefix("[").removesuffix("]")
    try:
        address = ipaddress.ip_address(bare)
    except ValueError:
        return None, bare
    return address, f"[{bare}]" if address.version == 6 else bare


def setup_announcer(settings: Settings) -> Callable[[str], None]:
    """What prints the one-time setup link (given its path) on the console. An address
    that means "every address" is shown as loopback (127.0.0.1 or [::1]): it is listened
    on too, and the guard lets a browser on this machine in by that name."""
    address, written = _address(settings.host)
    if address is not None and address.is_unspecified:
        written = "127.0.0.1" if address.version == 4 else "[::1]"
    base = f"http://{written}:{settings.port}"

    def announce(path: str) -> None:
        print(
            f"No account yet: open {base}{path} to create the first administrator "
            "(or run 'talekeeper users add NAME --admin').",
            file=sys.stderr,
            flush=True,
        )

    return announce


def detect_servers(settings: Settings, args: argparse.Namespace) -> int:
    """The local model servers, as ``GET /api/settings/detect`` lists them (``--json``:
    the same JSON), and the two settings that use one."""
    from talekeeper.services.endpoints.detect import detect

    logging.getLogger("httpx").setLevel(logging.WARNING)  # a line per port asked
    ports = settings.detect_port_list
    found = asyncio.run(detect(ports, (settings.port,)))
    if args.json:
        print(json.dumps([{"url": s.url, "kind": s.kind, "models": s.models} for s in found]))
        return 0
    asked = ", ".join(str(p) for p in ports if p != settings.port) or "none"
    if not found:
        print(
            f"No model server answered on 127.0.0.1 (ports asked: {asked}; "
            "TALEKEEPER_DETECT_PORTS lists them). Start Ollama, LM Studio, llama.cpp's "
            "llama-server, KoboldCpp or vLLM, or set TALEKEEPER_ENDPOINT_URL to a server "
            "elsewhere."
        )
        return 0
    for server in found:
        print(f"{server.kind} at {server.url}: {', '.join(server.models)}")
        print(
            f"  to use it: TALEKEEPER_ENDPOINT_URL={server.url} "
            f"TALEKEEPER_MODEL={shlex.quote(server.models[0])} (or pick it on the Settings page)"
        )
    return 0


def serve(settings: Settings, _args: argparse.Namespace) -> int:
    """Serve. Local mode has no login, so it serves on a loopback address only: a wider
    bind is refused (exit status 2) before anything starts. Accounts mode may bind wider.
    The app's start, which alone knows (after migrating) whether an account exists, hands
    a setup link to ``app.state.announce_setup``: the raw secret goes to the console only."""
    address, host = _address(settings.host)
    if address is not None:
        mapped = getattr(address, "ipv4_mapped", None)
        loopback = address.is_loopback or bool(mapped and mapped.is_loopback)
    else:  # a name: only localhost is sure to stay on this machine
        loopback = host == "localhost"
    if not loopback and settings.auth != AuthMode.ACCOUNTS:
        print(
            f"talekeeper: TALEKEEPER_HOST is {settings.host!r}, not a loopback address, and "
            "local mode has no login: anyone who can reach the port could read and change "
            "every story. To share it, set TALEKEEPER_AUTH=accounts and add an account with "
            "'talekeeper users add NAME --admin'; otherwise keep TALEKEEPER_HOST=127.0.0.1 "
            "(a reverse proxy in front adds the name it is reached by to "
            "TALEKEEPER_ALLOWED_HOSTS).",
            file=sys.stderr,
        )
        return 2

    import uvicorn

    from talekeeper.web.app import create_app

    print(f"Talekeeper {__version__} on http://{settings.host}:{settings.port}", file=sys.stderr)
    # On PostgreSQL the background passes run in `talekeeper worker` processes, never here.
    app = create_app(settings, queue_worker=False)
    app.state.announce_setup = setup_announcer(settings)
    uvicorn.run(
        app,
        host=settings.host,
        port=settings.port,
        log_level=settings.log_level,
        # The app reads X-Forwarded-For and -Proto itself, from TALEKEEPER_TRUSTED_PROXIES
        # alone (web/auth.py); uvicorn's own reading would believe any loopback client.
        proxy_headers=False,
    )
    return 0
