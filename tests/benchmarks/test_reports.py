"""A benchmark's report: printed, and written into its own section of the Markdown file only
when a file is named, another section's figures left as they were."""

from __future__ import annotations

from pathlib import Path

import pytest
from benchmarks.kit.report import publish


def test_a_report_is_printed_and_written_only_into_its_own_section(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    doc = tmp_path / "docs" / "benchmarks.md"
    publish("other figures", doc, "other", "Other")
    publish("first figures", doc, "mine", "Mine", " (plots beside it)")
    publish("second figures", doc, "mine", "Mine")
    text = doc.read_text()
    assert "other figures" in text and "second figures" in text and "first figures" not in text
    assert text.count("<!-- bench:mine -->") == 1 and "## Mine" in text
    out, err = capsys.readouterr()
    assert out.count("figures") == 3
    assert f"Written to {doc} (plots beside it)." in err


def test_without_a_file_the_report_is_only_printed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    publish("figures", None, "mine", "Mine")
    out, err = capsys.readouterr()
    assert out.strip() == "figures" and err == ""
    assert list(tmp_path.iterdir()) == []
