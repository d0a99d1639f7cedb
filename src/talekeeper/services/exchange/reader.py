"""An export file read into the model of its version (``fileformat``), or refused with the
JSON path of its first problem and what the value must be.

Before the model reads an entry, the file's format and version, its sections, the length
of each list, the nesting of every value and
its text are checked on the file as sent, without recursion and in time linear in it; no
message copies more of a client's value than ``shown`` does.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from pydantic import ValidationError
from pydantic_core import ErrorDetails

from talekeeper.core.errors import InvalidInput
from talekeeper.services.common import limits
from talekeeper.services.exchange.fileformat import (
    ENTRY_CAPS,
    FILES,
    FORMAT,
    MAX_NESTING,
    SECTIONS,
    AdventureFileV1,
    AdventureFileV2,
    AdventureFileV3,
    AdventureFileV4,
    AnyFile,
)
from talekeeper.services.exchange.values import ENTRY, FIELD, IMPORT, shown

NOT_VALID = "Not a valid Talekeeper export"
_SURROGATE = re.compile("[\ud800-\udfff]")

# What a value must be, for the refusals pydantic words itself (the model's own are worded
# by ``fileformat``).
_NATIVE = {
    "missing": "is missing",
    "model_type": "must be an object",
    "model_attributes_type": "must be an object",
    "dict_type": "must be an object",
    "list_type": "must be a list",
    "int_type": "must be a whole number",
    "string_type": "must be text",
}


def read(data: object) -> AnyFile:
    """The file as the model of its version, every value within an import's limits."""
    if not isinstance(data, dict):
        raise InvalidInput(f"{NOT_VALID}: file must be an object.")
    version = _version(data)
    check_counts(data)
    check_values(data)
    try:
        file = FILES[version].model_validate(data, context=IMPORT)
    except ValidationError as exc:
        raise _refusal(exc.errors(include_url=False)[0], version) from None
    assert isinstance(file, AdventureFileV1 | AdventureFileV2 | AdventureFileV3 | AdventureFileV4)
    return file


def _either(values: list[int]) -> str:
    """``1, 2 or 3``."""
    words = [str(v) for v in values]
    return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " or " + words[-1]


def _version(root: Mapping[str, object]) -> int:
    version = root.get("version")
    if (
        root.get("format") != FORMAT
        or isinstance(version, bool)
        or not isinstance(version, int)
        or version not in SECTIONS
    ):
        raise InvalidInput(
            f"This is not a Talekeeper adventure export (expected format {FORMAT!r}, "
            f"version {_either(sorted(SECTIONS))})."
        )
    unknown = sorted(set(root) - SECTIONS[version])
    if unknown:
        raise InvalidInput(
            f"{NOT_VALID}: unknown section {limits.quoted(unknown[0])}; a "
            f"version {version} export has {', '.join(sorted(SECTIONS[version]))}."
        )
    return version


def _refusal(error: ErrorDetails, version: int) -> InvalidInput:
    path = "file" + "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in error["loc"])
    kind = error["type"]
    if kind == ENTRY:  # a sentence of its own
        return InvalidInput(f"{NOT_VALID}: {path}: {error['msg']}")
    if kind == FIELD:
        what = error["msg"]
    elif kind == "extra_forbidden":
        what = f"is not a field of a version {version} export; remove it"
    else:
        what = _NATIVE.get(kind, f"is not valid ({error['msg']})")
    return InvalidInput(f"{NOT_VALID}: {path} {what}.")


def check_counts(root: Mapping[str, object]) -> None:
    """Each list of the file within what one adventure may hold, before any entry is read."""
    for section, (cap, what) in ENTRY_CAPS.items():
        value = root.get(section)
        if isinstance(value, list) and len(value) > cap:
            raise InvalidInput(
                f"This file has {len(value):,} {what}; an adventure holds at most {cap:,}. "
                f"Remove some from file.{section} before importing.",
                code="limit_reached",
            )


def check_values(data: object) -> None:
    """No value of the file nests deeper than ``MAX_NESTING``, and no text holds what no
    UTF-8 store can (a lone surrogate, ``"\\ud800"`` in JSON); walked without recursion."""
    stack: list[tuple[object, int]] = [(data, 1)] if isinstance(data, dict | list) else []
    while stack:
        value, depth = stack.pop()
        if depth > MAX_NESTING:
            raise InvalidInput(
                f"{NOT_VALID}: a value nests more than {MAX_NESTING} lists or objects deep; "
                "an export never does. Was the file changed by hand?"
            )
        children = [*value, *value.values()] if isinstance(value, dict) else value
        for child in children if isinstance(children, list) else []:
            if isinstance(child, str):
                if _SURROGATE.search(child):
                    raise InvalidInput(
                        f"{NOT_VALID}: the text {shown(child)} holds a lone surrogate (an "
                        "escape such as \\ud800 that is half of a character); remove it."
                    )
            elif isinstance(child, dict | list):
                stack.append((child, depth + 1))
