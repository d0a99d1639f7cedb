"""The README and docs/ point only at what exists.

Pure: reads files, starts nothing.

- Every relative link or image in README.md and docs/*.md names a file or folder of the
  repository, resolved from the page that holds it (an ``#anchor`` is checked apart).
- Every ``#anchor``, on its own or after a Markdown file, names a heading of that file,
  by GitHub's rule (lowercase; punctuation but ``-`` and ``_`` dropped; spaces to ``-``;
  a repeated heading gets ``-1``, ``-2``, ...).
- Every ``docs/<page>.md`` a module under src/, benchmarks/ or tests/ cites exists, and
  every ``§N`` cited after it (one, a list or a range "§2 to §5") is a heading of that
  page that starts with ``§N`` (docs/memory.md: ``## §5 Retrieval``); a page cited by its
  bare name ("memory.md §2") is refused.
- Every file a module of src/, benchmarks/ or tests/ names as a path in double backquotes
  (````services/memory/snapshot.py````) exists, read from the repository's root, from
  ``src/`` or ``src/talekeeper/``, or from the module's own folder or the one above it.
  The archived studies (``benchmarks/archive/``) are kept as they last ran, and left out.
"""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import unquote

import pytest

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]

FENCE = re.compile(r"^ {0,3}(```|~~~).*?^ {0,3}\1[^\n]*$", re.M | re.S)
CODE_SPAN = re.compile(r"(`+)(?!`).*?(?<!`)\1(?!`)", re.S)
INLINE_TARGET = re.compile(r"\]\(\s*<?([^)\s>]*)>?(?:\s+(?:\"[^\"]*\"|'[^']*'))?\s*\)")
REFERENCE_TARGET = re.compile(r"^ {0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s|$)", re.M)
HEADING = re.compile(r"^ {0,3}(#{1,6})\s+(.*?)\s*#*\s*$", re.M)
SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")
LINK_TEXT = re.compile(r"!?\[([^\]]*)\]\([^)]*\)")
NAMED_FILE = re.compile(r"``([\w.-]+(?:/[\w.-]+)+\.(?:py|md|json|txt|sh))``")
CITATION = re.compile(r"(docs/[\w./-]+?\.md)\b((?:[\s#]*(?:,|to|–)?[\s#]*§\d+)*)")
# A page cited by its name alone ("memory.md §2"): the reader cannot tell where it is.
BARE_CITATION = re.compile(r"(?<![\w/.-])([\w-]+\.md)\s*§\d+")


def prose(text: str) -> str:
    """The text with fenced code blocks and code spans blanked out (links there are code)."""
    text = FENCE.sub(lambda m: "\n" * m.group(0).count("\n"), text)
    return CODE_SPAN.sub("", text)


def targets(text: str) -> list[str]:
    body = prose(text)
    return INLINE_TARGET.findall(body) + REFERENCE_TARGET.findall(body)


def slug(heading: str) -> str:
    """GitHub's anchor for a heading's text."""
    text = LINK_TEXT.sub(r"\1", heading).replace("`", "")
    text = re.sub(r"[^\w\- ]", "", text.lower())
    return text.replace(" ", "-")


def headings(path: Path) -> list[str]:
    """The page's headings as written (a code span in one is part of its anchor)."""
    text = FENCE.sub("", path.read_text(encoding="utf-8"))
    return [m.group(2) for m in HEADING.finditer(text)]


def anchors(path: Path) -> set[str]:
    seen: dict[str, int] = {}
    found = set()
    for heading in headings(path):
        base = slug(heading)
        count = seen.get(base, 0)
        seen[base] = count + 1
        found.add(base if count == 0 else f"{base}-{count}")
    return found


def broken_links(page: Path, root: Path = ROOT) -> list[str]:
    problems = []
    for target in targets(page.read_text(encoding="utf-8")):
        if not target or SCHEME.match(target):
            continue  # http(s)://, mailto: and the like are not the repository's
        path_part, _, anchor = target.partition("#")
        where = page if not path_part else (page.parent / unquote(path_part)).resolve()
        shown = f"{page.relative_to(root)}: ({target})"
        if not where.is_relative_to(root):
            problems.append(f"{shown} leaves the repository")
            continue
        if not where.exists():
            problems.append(f"{shown} points at {where.relative_to(root)}, which does not exist")
            continue
        wants_heading = bool(anchor) and where.is_file() and where.suffix == ".md"
        if wants_heading and unquote(anchor).lower() not in anchors(where):
            problems.append(
                f"{shown}: no heading of {where.relative_to(root)} has the anchor #{anchor}"
            )
    return problems


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_link_of_the_readme_and_docs_resolves(page: Path) -> None:
    problems = broken_links(page)
    assert not problems, "broken links:\n" + "\n".join(problems)


def cited_modules() -> list[Path]:
    """The modules whose citations are checked: src/, benchmarks/ and tests/ (not the
    archived studies, kept as they last ran, nor this file, whose examples are made up)."""
    return [
        module
        for folder in ("src", "benchmarks", "tests")
        for module in sorted((ROOT / folder).rglob("*.py"))
        if "archive" not in module.relative_to(ROOT).parts and module != Path(__file__).resolve()
    ]


def citations() -> list[tuple[Path, str, list[str]]]:
    found = []
    for module in cited_modules():
        for match in CITATION.finditer(module.read_text(encoding="utf-8")):
            found.append((module, match.group(1), re.findall(r"§(\d+)", match.group(2))))
    return found


def test_every_docs_page_a_module_cites_exists_with_the_sections_it_cites() -> None:
    problems = []
    cited = citations()
    for module, page, sections in cited:
        where = ROOT / page
        shown = f"{module.relative_to(ROOT)} cites {page}"
        if not where.is_file():
            problems.append(f"{shown}, which does not exist")
            continue
        numbered = {m.group(1) for h in headings(where) if (m := re.match(r"§(\d+)\b", h))}
        problems += [
            f"{shown} §{n}, which has no heading '§{n} …'" for n in sections if n not in numbered
        ]
    problems += [
        f"{module.relative_to(ROOT)} cites {match.group(0)!r}: name the page as docs/…"
        for module in cited_modules()
        for match in BARE_CITATION.finditer(module.read_text(encoding="utf-8"))
    ]
    assert not problems, "\n".join(problems)
    assert any(sections for _, _, sections in cited), "no module cites a docs section any more"


def test_a_citation_is_read_whole_and_a_bare_page_name_is_caught() -> None:
    text = "(docs/memory.md §2 to §5), docs/memory.md §1, §3; (memory.md §8); x/memory.md §1"
    assert [(m.group(1), re.findall(r"§(\d+)", m.group(2))) for m in CITATION.finditer(text)] == [
        ("docs/memory.md", ["2", "5"]),
        ("docs/memory.md", ["1", "3"]),
    ]
    assert [m.group(0) for m in BARE_CITATION.finditer(text)] == ["memory.md §8"]


def test_the_checks_catch_what_they_are_for(tmp_path: Path) -> None:
    """The rules themselves: a missing file, a missing heading, code left alone."""
    assert slug("Scale-out (PostgreSQL, app processes, workers)") == (
        "scale-out-postgresql-app-processes-workers"
    )
    assert slug("§5 Retrieval") == "5-retrieval"
    assert slug("The score's weights") == "the-scores-weights"
    assert slug("`cache` and [links](x.md)") == "cache-and-links"
    text = 'See [a](a.md), ![b](b.png "t"), [c](https://x.test), `[d](d.md)`\n```\n[e](e.md)\n```\n'
    assert targets(text) == ["a.md", "b.png", "https://x.test"]
    root = tmp_path.resolve()
    (root / "docs").mkdir()
    (root / "docs" / "a.md").write_text("# A\n\n## Two words\n\n## Two words\n\n## Why `x`\n")
    page = root / "README.md"
    page.write_text(
        "[ok](docs/a.md#two-words-1) [ok](docs/a.md#why-x) [ok](docs/) [ok](#top)\n"
        "[gone](docs/b.md) [no heading](docs/a.md#three) [out](../elsewhere.md)\n"
        "[mail](mailto:x@y.test)\n# Top\n"
    )
    assert broken_links(page, root) == [
        "README.md: (docs/b.md) points at docs/b.md, which does not exist",
        "README.md: (docs/a.md#three): no heading of docs/a.md has the anchor #three",
        "README.md: (../elsewhere.md) leaves the repository",
    ]


def unnamed_files(module: Path, root: Path) -> list[str]:
    """The paths ``module`` names in double backquotes that resolve to no file."""
    bases = [root, root / "src", root / "src" / "talekeeper", module.parent, module.parent.parent]
    return [
        f"{module.relative_to(root)} names {path}, which is not in the repository"
        for path in NAMED_FILE.findall(module.read_text(encoding="utf-8"))
        if not any((base / path).is_file() for base in bases)
    ]


def test_every_file_a_module_names_is_in_the_repository() -> None:
    problems = [problem for module in cited_modules() for problem in unnamed_files(module, ROOT)]
    assert not problems, "\n".join(problems)


def test_a_named_file_that_is_gone_is_caught(tmp_path: Path) -> None:
    root = tmp_path.resolve()
    (root / "src" / "talekeeper" / "services").mkdir(parents=True)
    (root / "src" / "talekeeper" / "web.py").write_text("")
    module = root / "src" / "talekeeper" / "services" / "x.py"
    module.write_text('"""See ``talekeeper/web.py`` and ``tests/double/server.py``."""\n')
    assert unnamed_files(module, root) == [
        "src/talekeeper/services/x.py names tests/double/server.py, which is not in the repository"
    ]
