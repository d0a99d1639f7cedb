"""``talekeeper lore import|export`` and ``talekeeper new --from-file`` as a player runs them:
the preview writes nothing, the import makes what the preview listed, the export reads back
as the same cards, an adventure starts from a character card, and a bad file or a bad
option is one line on standard error."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.kit.cli import Cli
from tests.services.lore.builders import fixture

from talekeeper.services.lore import read_lore


def card_names(cli: Cli, adventure: int) -> list[str]:
    exported = json.loads(cli.run("export", str(adventure)).stdout)
    return [card["name"] for card in exported["cards"]]


def write(tmp_path: Path, name: str) -> Path:
    path = tmp_path / name
    path.write_bytes(fixture(name))
    return path


def one_line(done: Any) -> str:
    assert done.returncode != 0 and done.stdout == "", done
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("talekeeper: "), done.stderr
    return str(lines[0])


def test_lore_import_previews_then_makes_the_cards_and_export_reads_back(
    cli: Cli, tmp_path: Path
) -> None:
    done = cli.run("new", "--title", "Eldoria")
    adventure = int(done.stdout)
    before = card_names(cli, adventure)
    book = write(tmp_path, "sillytavern_world_info.json")
    expected = read_lore(book.read_bytes(), book.name)

    preview = cli.run("lore", "import", str(book), "--adventure", str(adventure), "--dry-run")
    assert preview.returncode == 0, preview.stderr
    assert preview.stdout.startswith(f"SillyTavern World Info: would make {len(expected.cards)}")
    assert "cards" in preview.stdout.splitlines()[len(expected.cards) + 1]  # totals
    assert card_names(cli, adventure) == before  # nothing written

    made = cli.run("lore", "import", str(book), "--adventure", str(adventure))
    assert made.returncode == 0, made.stderr
    assert f"made {len(expected.cards)} story cards" in made.stdout
    assert card_names(cli, adventure) == before + [c.name for c in expected.cards]

    for fmt in ("aidungeon", "sillytavern", "ccv3", "novelai"):
        out = tmp_path / f"out.{fmt}"
        exported = cli.run("lore", "export", str(adventure), "--format", fmt, "--output", str(out))
        assert exported.returncode == 0, exported.stderr
        back = read_lore(out.read_bytes(), out.name)
        names = [c.name for c in back.cards]
        assert names[-len(expected.cards) :] == [c.name for c in expected.cards], fmt
    to_stdout = cli.run("lore", "export", str(adventure), "--format", "sillytavern")
    assert json.loads(to_stdout.stdout)["entries"]

    # An always-on card reads as such in the terminal's Insights.
    always = [c.name for c in expected.cards if c.always_on]
    assert always
    played = cli.run("play", str(adventure), stdin="/dry look around\n/quit\n")
    assert played.returncode == 0, played.stderr
    assert f"card {always[0]}: always on" in played.stdout


def test_new_from_a_character_card_with_a_chosen_greeting(cli: Cli, tmp_path: Path) -> None:
    card = write(tmp_path, "character_card_v2.json")
    preview = cli.run("new", "--from-file", str(card), "--dry-run", "--greeting", "1")
    assert preview.returncode == 0, preview.stderr
    assert preview.stdout.startswith("Character Card V2: would start")
    assert "* greeting 1:" in preview.stdout

    done = cli.run("new", "--from-file", str(card), "--greeting", "1")
    assert done.returncode == 0, done.stderr
    adventure = int(done.stdout)
    exported = json.loads(cli.run("export", str(adventure)).stdout)
    assert "Seren Ashdown" in [c["name"] for c in exported["cards"]]
    assert "waves from a hill" in json.dumps(exported)


def test_bad_files_and_options_are_one_line(cli: Cli, tmp_path: Path) -> None:
    adventure = int(cli.run("new", "--title", "T").stdout)
    junk = tmp_path / "junk.json"
    junk.write_text('{"hello": 1}')
    assert "not a lore file" in one_line(
        cli.run("lore", "import", str(junk), "--adventure", str(adventure))
    )
    assert "Cannot read" in one_line(
        cli.run("lore", "import", str(tmp_path / "none.json"), "--adventure", str(adventure))
    )
    book = write(tmp_path, "sillytavern_world_info.json")
    assert "import" in one_line(cli.run("new", "--from-file", str(book))).lower()
    card = write(tmp_path, "character_card_v2.json")
    assert "greeting" in one_line(cli.run("new", "--from-file", str(card), "--greeting", "9"))
    assert "--from-file" in one_line(cli.run("new", "--title", "T", "--dry-run"))
    missing = cli.run("lore", "import", str(book), "--adventure", "999999")
    assert "999999" in one_line(missing)
    bad_format = cli.run("lore", "export", str(adventure), "--format", "docx")
    assert bad_format.returncode == 2 and "docx" in bad_format.stderr
