"""Reading server-sent events in tests."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any


def parse_events(lines: Iterable[str]) -> list[tuple[str, dict[str, Any]]]:
    """(event name, JSON data) pairs from the lines of an event stream."""
    events: list[tuple[str, dict[str, Any]]] = []
    name, data = "message", ""
    for line in lines:
        if line.startswith("event:"):
            name = line[6:].strip()
        elif line.startswith("data:"):
            data += line[5:].strip()
        elif not line.strip() and data:
            events.append((name, json.loads(data)))
            name, data = "message", ""
    if data:
        events.append((name, json.loads(data)))
    return events
