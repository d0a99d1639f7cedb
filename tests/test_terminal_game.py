"""A newcomer's terminal game on the embedded model: 30 turns of `talekeeper play` on a
fresh install, and not one log line among the story (llama.cpp's own messages included);
the log is in the data dir."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from tests.kit.cli import talekeeper

pytestmark = pytest.mark.model

# The log's own format, and llama.cpp's and onnxruntime's when they print for themselves.
LOG_LINE = re.compile(
    r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d+ [A-Z]+ |llama_|llm_load|ggml_|load_tensors|"
    r"print_info|\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d+ \[[WEI]:onnxruntime)"
)
ACTIONS = ["look around", "walk to the lantern", "ask the keeper about the storm", ""]


def test_thirty_turns_in_the_terminal_show_only_the_story(tmp_path: Path) -> None:
    data = tmp_path / "data"
    made = talekeeper(data, "new", "--scenario", "lantern-coast", process=60)
    assert made.returncode == 0 and made.stderr == "", made.stderr
    turns = [ACTIONS[n % len(ACTIONS)] for n in range(30)]
    stdin = "".join(t + "\n" for t in turns) + "/quit\n"
    # A short reply and a small context keep thirty turns quick; what is printed does not
    # depend on their size.
    # A real process: what llama.cpp writes to its file descriptors is what is looked for.
    played = talekeeper(
        data, "play", stdin=stdin, process=900, reply_tokens="24", context_tokens="1024"
    )
    assert played.returncode == 0, played.stderr
    assert played.stderr == "", played.stderr[:2000]
    lines = played.stdout.splitlines()
    assert not [line for line in lines if LOG_LINE.search(line)], played.stdout[:4000]
    assert "tiny placeholder" in lines[1]  # the banner says what the narrator is
    assert played.stdout.count("> ") >= 30  # every turn was played and prompted for
    log = (data / "talekeeper.log").read_text(encoding="utf-8")
    assert "Loading embedded narrator" in log  # the log went where it was meant to
