"""``talekeeper library ...`` as a player runs it (in this process, ``kit.cli``) on one
data directory against the loopback model double: a file is added (its vectors made now
with ``--wait``, or left for the background), listed, searched, attached to an adventure
and detached, and removed; a failed embedding under ``--wait`` exits 1 and ``reindex
--wait`` retries it; every refusal is one line with exit status 1; in accounts mode each
account sees its own library."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

from tests.kit.cli import Cli, add_account, as_accounts, one_line_error
from tests.kit.library import BIBLE

from talekeeper.services.library.documents import CAPS
from talekeeper_testkit.double import ModelDouble

NOTES = b"""# Harbour notes

Captain Orrin owes the harbour master forty crowns and avoids the customs house at dawn.

The lighthouse keeper has not been seen since the storm; his lamp still burns.
"""


def write(tmp_path: Path, name: str, data: bytes) -> str:
    path = tmp_path / name
    path.write_bytes(data)
    return str(path)


def added(done: subprocess.CompletedProcess[str]) -> int:
    """The id ``library add`` printed, alone on its one line."""
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert len(lines) == 1, done.stdout
    found = re.match(r"(\d+)  ", lines[0])
    assert found, lines[0]
    return int(found.group(1))


def vectors(cli: Cli, source: int) -> tuple[int, int]:
    """How many of the source's passages have a vector, of how many."""
    rows = cli.query(
        "SELECT count(vector), count(*) FROM library_passages WHERE source_id = :s", s=source
    )
    return int(rows[0][0]), int(rows[0][1])


def refused(done: subprocess.CompletedProcess[str], status: int = 1) -> str:
    """A refusal: one line; status 1 as for every command (2: who acts, before it runs)."""
    assert done.returncode == status, (done.returncode, done.stderr)
    return one_line_error(done)


def test_add_list_search_attach_detach_and_remove(cli: Cli, tmp_path: Path) -> None:
    later = cli.run("library", "add", write(tmp_path, "notes.md", NOTES))
    notes = added(later)
    assert later.stdout.endswith("  Harbour notes  (md, 1 passage)  indexing\n"), later.stdout
    assert "--wait makes them now" in later.stderr
    assert vectors(cli, notes) == (0, 1)  # left for the background

    waited = cli.run("library", "add", write(tmp_path, "salt-coast.md", BIBLE), "--wait")
    bible = added(waited)
    done, total = vectors(cli, bible)
    assert done == total > 1
    assert waited.stdout.endswith(f"  The Salt Coast  (md, {total} passages)  ready\n")
    assert f"embedded {total}/{total}" in waited.stderr.splitlines()[-1]

    listing = cli.run("library", "list")
    assert listing.returncode == 0, listing.stderr
    head, *rows = listing.stdout.splitlines()
    assert head.split() == ["ID", "TITLE", "KIND", "PASSAGES", "STATE", "VECTORS", "ATTACHED"]
    assert rows[1].split()[-4:] == [str(total), "ready", f"{total}/{total}", "0"]
    # The --wait run found the first file due too, and made its vectors on the way.
    assert rows[0].split()[0] == str(notes) and "Harbour notes" in rows[0]

    found = cli.run("library", "search", "copper doors of the vault", "--limit", "2")
    assert found.returncode == 0, found.stderr
    out = found.stdout
    assert out.startswith(f"{total + 1} passages considered; words searched: copper, door")
    assert "\n1. The Salt Coast › Places › The Drowned Library\n" in out
    scores = re.search(r"final (\S+)  semantic (\S+)  lexical (\S+)", out)
    assert scores and float(scores[1]) > 0 and float(scores[3]) == 1.0
    assert "   Below the cliffs of Marrow Point lies the Drowned Library" in out
    assert "\n2. " in out and "\n3. " not in out  # --limit
    assert max(len(line) for line in out.splitlines()) <= 88

    adventure = int(cli.run("new", "--title", "Salt").stdout)
    for source in (notes, bible):
        attached = cli.run("library", "attach", str(source), str(adventure))
        assert attached.returncode == 0, attached.stderr
    again = cli.run("library", "attach", str(bible), str(adventure))
    assert f'{bible} "The Salt Coast" was already attached to adventure {adventure}' in again.stdout
    assert "2 source(s) attached" in again.stdout
    detached = cli.run("library", "detach", str(notes), str(adventure))
    assert "detached" in detached.stdout and "1 source(s) attached" in detached.stdout
    exported = json.loads(cli.run("export", str(adventure)).stdout)
    assert [ref["filename"] for ref in exported["knowledge"]] == ["salt-coast.md"]  # kept

    removed = cli.run("library", "remove", str(bible))
    assert removed.stdout == f'removed {bible} "The Salt Coast", and detached from 1 adventure(s)\n'
    assert cli.query("SELECT id FROM library_sources") == [(notes,)]
    assert "knowledge" not in json.loads(cli.run("export", str(adventure)).stdout)


def test_a_failed_embedding_under_wait_exits_1_and_reindex_tries_again(
    cli: Cli, tmp_path: Path, double: ModelDouble
) -> None:
    double.fail_next("500", model="double-embed")
    failed = cli.run("library", "add", write(tmp_path, "salt-coast.md", BIBLE), "--wait")
    assert failed.returncode == 1
    source = int(failed.stdout.split()[0])
    assert failed.stdout.endswith("  failed\n")
    assert "talekeeper: making its vectors failed: The endpoint" in failed.stderr
    assert "injected server error" in failed.stderr
    assert f"'talekeeper library reindex {source} --wait'" in failed.stderr
    assert "Traceback" not in failed.stderr and "WARNING" not in failed.stderr  # no log lines

    listing = cli.run("library", "list").stdout
    assert re.search(rf"^ *{source} .* failed ", listing, re.M), listing
    assert f"source {source} failed: The endpoint" in listing and "(retried from 20" in listing

    retried = cli.run("library", "reindex", str(source), "--wait")
    assert retried.returncode == 0, retried.stderr
    assert retried.stdout.endswith("  ready\n")
    done, total = vectors(cli, source)
    assert done == total > 1


def test_every_refusal_is_one_line_with_status_2_and_changes_nothing(
    cli: Cli, tmp_path: Path
) -> None:
    huge = tmp_path / "huge.txt"
    with huge.open("wb") as file:  # sparse: refused by its size, before it is read
        file.truncate(CAPS.file_bytes + 1)
    empty = write(tmp_path, "empty.txt", b"")
    adventure = str(cli.new())
    results = cli.run_all(
        [
            ["library", "add", str(huge)],
            ["library", "add", str(tmp_path / "missing.md")],
            ["library", "add", str(tmp_path)],
            ["library", "add", empty],
            ["library", "remove", "41"],
            ["library", "attach", "41", adventure],
            ["library", "search", "   "],
        ]
    )
    messages = [refused(done) for done in results]
    assert "huge.txt is 50.0 MB; a library file may be at most 50 MB" in messages[0]
    assert "Cannot read" in messages[1] and "No such file" in messages[1]
    assert "Is a directory" in messages[2]
    assert "empty.txt" in messages[3]  # the reader's reason, whatever it is
    assert messages[4] == messages[5] == "talekeeper: There is no library source 41."
    assert "Give the words to search for" in messages[6]
    assert cli.query("SELECT count(*) FROM library_sources") == [(0,)]
    source = added(cli.run("library", "add", write(tmp_path, "notes.md", NOTES)))
    unknown = cli.run("library", "attach", str(source), "999999")
    assert refused(unknown) == "talekeeper: There is no adventure 999999."
    bad_id = cli.run("library", "remove", "x1")
    assert bad_id.returncode == 2 and "'x1' is not a library source id" in bad_id.stderr
    assert "Harbour notes" in cli.run("library", "list").stdout


def test_each_account_has_its_own_library(cli: Cli, tmp_path: Path) -> None:
    add_account(cli, "mara", "--admin")
    add_account(cli, "bob")
    shared = as_accounts(cli)
    # A title that tries to drive the terminal is shown without its escape sequence.
    sneaky = write(tmp_path, "sneaky.md", b"# Sea \x1b[2J\x1b]0;pwned\x07Charts\n\n" + NOTES[16:])
    maras = added(shared.run("library", "add", sneaky, "--user", "mara"))
    bobs_adventure = int(shared.run("new", "--title", "Bob's", "--user", "bob").stdout)
    who, theirs, attach, listing, bobs = shared.run_all(
        [
            ["library", "list"],
            ["library", "remove", str(maras), "--user", "bob"],
            ["library", "attach", str(maras), str(bobs_adventure), "--user", "bob"],
            ["library", "list", "--user", "mara"],
            ["library", "list", "--user", "bob"],
        ]
    )
    assert "say which account this acts as with --user NAME" in refused(who, 2)
    assert refused(theirs) == f"talekeeper: There is no library source {maras}."
    assert refused(attach) == f"talekeeper: There is no library source {maras}."
    assert "\x1b" not in listing.stdout and "\x07" not in listing.stdout
    assert "Sea  [2J ]0;pwned Charts" in listing.stdout
    assert bobs.stdout.startswith("Your library is empty")
    local = cli.run("library", "list", "--user", "mara")  # local mode refuses --user
    assert "in local mode every command acts as the one local user" in refused(local, 2)
