"""``talekeeper serve`` leaves X-Forwarded-For to the app (``TALEKEEPER_TRUSTED_PROXIES``,
``web/auth.py``): uvicorn's own reading, which believes any loopback client by default,
is off, so a program on this machine cannot choose the address the throttle counts."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import uvicorn
from tests.conftest import make_settings

from talekeeper.cli import serve as cli_serve


def test_serve_turns_uvicorns_proxy_headers_off(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: dict[str, Any] = {}
    monkeypatch.setattr(uvicorn, "run", lambda app, **options: seen.update(options))
    settings = make_settings(tmp_path)
    assert cli_serve.serve(settings, None) == 0  # type: ignore[arg-type]
    assert seen["proxy_headers"] is False
