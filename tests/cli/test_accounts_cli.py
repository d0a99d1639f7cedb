"""The command line in accounts mode (commands run in this process, ``serve`` as a real
process) against the loopback model double and one data directory:

- ``play``, ``new``, ``export`` and ``import`` act as the account ``--user`` names; in
  accounts mode it is required, in local mode refused (one line, exit status 2), and no
  command creates an empty new "local" user once the first account took it over.
- ``talekeeper tokens add/list/revoke`` make, list and revoke an account's API tokens; the
  new token is the only thing on standard output, and works as the API reads it.
- ``talekeeper serve`` with no account prints the one-time setup link, which makes the
  first administrator.
"""

from __future__ import annotations

import json
import queue
import re
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from tests.conftest import data_database, make_settings
from tests.kit.accounts import PASSWORD
from tests.kit.cli import Cli, add_account, as_accounts, one_line_error

from talekeeper.cli.main import build_parser, main
from talekeeper.cli.serve import setup_announcer
from talekeeper.services import accounts
from talekeeper.storage.db import make_engine, make_session_factory, read_scope
from talekeeper_testkit.double import ModelDouble

ROOT = Path(__file__).resolve().parents[2]


def owners(cli: Cli) -> dict[int, str]:
    """Each adventure's id and the name of the user it belongs to."""
    query = "SELECT a.id, u.name FROM adventures a JOIN users u ON u.id = a.user_id"
    return dict(cli.query(query))


def user_names(cli: Cli) -> list[str]:
    return [name for (name,) in cli.query("SELECT name FROM users ORDER BY id")]


def new_id(done: subprocess.CompletedProcess[str]) -> int:
    assert done.returncode == 0, done.stderr
    assert re.fullmatch(r"\d+\n", done.stdout), done.stdout
    return int(done.stdout)


# -- play, new, export and import act as an account ------------------------------------------


def test_the_terminal_commands_act_as_the_account_user_names(cli: Cli, tmp_path: Path) -> None:
    played_locally = cli.new("lantern-coast")
    add_account(cli, "mara", "--admin")  # takes over the local user and its adventure
    add_account(cli, "bob")
    shared = as_accounts(cli)

    # Which account? In accounts mode a command must say, and nothing is created meanwhile.
    missing = shared.run_all([["export", str(played_locally)], ["new", "--scenario", "x"]])
    for done in missing:
        assert done.returncode == 2
        assert "say which account this acts as with --user NAME" in one_line_error(done)
    assert user_names(cli) == ["mara", "bob"]  # no empty new "local" user

    exported = shared.run("export", str(played_locally), "--user", "MARA")  # names ignore case
    assert exported.returncode == 0, exported.stderr
    assert json.loads(exported.stdout)["adventure"]["title"] == "The Lantern Coast"
    theirs = shared.run("export", str(played_locally), "--user", "bob")
    assert f"There is no adventure {played_locally}" in one_line_error(theirs)

    bobs = new_id(shared.run("new", "--scenario", "ashford-manor", "--user", "bob"))
    copy = tmp_path / "copy.json"
    copy.write_text(exported.stdout, encoding="utf-8")
    imported = new_id(shared.run("import", str(copy), "--user", "bob"))
    assert owners(cli) == {played_locally: "mara", bobs: "bob", imported: "bob"}

    mara_plays, bob_plays, bob_trespasses = shared.run_all(
        [
            ["play", "--user", "mara"],
            ["play", str(imported), "--user", "bob"],
            ["play", str(played_locally), "--user", "bob"],
        ]
    )  # stdin is empty: each shows the adventure it opened and ends
    for done in (mara_plays, bob_plays):
        assert done.returncode == 0 and done.stderr == "", done.stderr
    assert f"(adventure {played_locally})" in mara_plays.stdout.splitlines()[0]  # her newest
    assert f"(adventure {imported})" in bob_plays.stdout.splitlines()[0]
    assert f"There is no adventure {played_locally}" in one_line_error(bob_trespasses)
    assert user_names(cli) == ["mara", "bob"]


def test_user_is_refused_in_local_mode_and_must_name_an_enabled_account(cli: Cli) -> None:
    adventure = cli.new("lantern-coast")
    add_account(cli, "mara", "--admin")  # takes the local user and its adventure over
    add_account(cli, "bob")
    assert cli.run("users", "disable", "bob").returncode == 0
    local, as_before = cli.run_all(
        [["export", str(adventure), "--user", "mara"], ["export", str(adventure)]]
    )
    assert local.returncode == 2
    assert "in local mode every command acts as the one local user" in one_line_error(local)
    # Local mode as it always was: it acts as the local user (made again, empty, since mara
    # took the old one over), who has no such adventure.
    assert f"There is no adventure {adventure}" in one_line_error(as_before)
    unknown, disabled = as_accounts(cli).run_all(
        [["new", "--title", "x", "--user", "nobody"], ["new", "--title", "x", "--user", "bob"]]
    )
    assert unknown.returncode == 1 and "no account named 'nobody'" in one_line_error(unknown)
    refused = one_line_error(disabled)
    assert disabled.returncode == 1 and "'bob' is disabled" in refused
    assert "talekeeper users enable bob" in refused
    assert set(owners(cli).values()) == {"mara"}  # nothing was made for either


def test_play_with_no_adventure_suggests_the_command_with_the_account(cli: Cli) -> None:
    add_account(cli, "mara")
    nothing = one_line_error(as_accounts(cli).run("play", "--user", "mara"))
    assert "talekeeper new --scenario ashford-manor --user mara" in nothing


# -- tokens ------------------------------------------------------------------------------------


def principal(cli: Cli, raw: str) -> accounts.Principal | None:
    engine = make_engine(data_database(cli.data))
    try:
        with read_scope(make_session_factory(engine)) as session:
            return accounts.principal_for_token(session, raw)
    finally:
        engine.dispose()


def test_tokens_add_list_and_revoke_work_on_the_accounts_tokens(cli: Cli) -> None:
    add_account(cli, "mara")
    add_account(cli, "tove")
    made = cli.run(
        "tokens", "add", "backup script", "--user", "MARA", "--scope", "read", "--scope", "play"
    )
    assert made.returncode == 0, made.stderr
    assert re.fullmatch(r"tk_[A-Za-z0-9_-]{43}\n", made.stdout), made.stdout  # alone
    raw = made.stdout.strip()
    assert "shown only this once" in made.stderr and "expires 20" in made.stderr  # 90 days
    found = principal(cli, raw)
    assert found is not None and found.user.name == "mara"
    assert found.scopes == {accounts.Scope.READ, accounts.Scope.PLAY}

    weekly = cli.run(
        "tokens", "add", "\x1b[2Jweekly", "--user", "mara", "--scope", "read", "--days", "7"
    )
    assert weekly.returncode == 0, weekly.stderr
    listed = cli.run("tokens", "list", "--user", "mara")
    assert listed.returncode == 0 and "\x1b" not in listed.stdout  # shown, never acted on
    lines = listed.stdout.splitlines()
    assert lines[0].split() == [
        "ID",
        "NAME",
        "SCOPES",
        "CREATED",
        "(UTC)",
        "EXPIRES",
        "LAST",
        "USED",
    ]
    assert [line.split()[0] for line in lines[1:]] == ["1", "2"]
    assert re.match(r"1 +backup script +play read ", lines[1]) and "\\x1b[2Jweekly" in lines[2]
    assert lines[1].split()[-1] == "never" and lines[1].split()[-2] != "never"  # 90 days
    assert lines[2].split()[-1] == "never" and lines[2].split()[-2] != "never"  # 7 days

    empty = cli.run("tokens", "list", "--user", "tove")
    assert empty.stdout == "" and "'tove' has no API tokens" in empty.stderr
    others = cli.run("tokens", "revoke", str(found.token_id), "--user", "tove")
    assert others.returncode == 1 and "'tove' has no token" in one_line_error(others)
    assert principal(cli, raw) is not None  # another account cannot revoke it
    revoked = cli.run("tokens", "revoke", str(found.token_id), "--user", "mara")
    assert revoked.returncode == 0, revoked.stderr
    assert principal(cli, raw) is None


@pytest.mark.parametrize(
    ("args", "code", "says"),
    [
        (("--user", "mara", "--scope", "admin"), 1, "Only an administrator's token"),
        (("--user", "mara", "--scope", "read", "--days", "0"), 1, "from 1 to 3,650"),
        (("--user", "nobody", "--scope", "read"), 1, "no account named 'nobody'"),
        (("--user", "mara"), 2, "the following arguments are required: --scope"),
        (("--user", "mara", "--scope", "write"), 2, "invalid choice: 'write'"),
        (("--user", "mara", "--scope", "read", "--days", "-1"), 2, "not a number of days"),
    ],
)
def test_a_refused_token_is_not_made_and_says_why(
    cli: Cli, args: tuple[str, ...], code: int, says: str
) -> None:
    add_account(cli, "mara")
    done = cli.run("tokens", "add", "script", *args)
    assert done.returncode == code and done.stdout == "", done.stderr
    assert says in done.stderr, done.stderr
    assert cli.run("tokens", "list", "--user", "mara").stdout == ""


def test_every_scope_can_be_asked_for_on_the_command_line() -> None:
    for scope in accounts.Scope:
        args = build_parser().parse_args(["tokens", "add", "t", "--user", "m", "--scope", scope])
        assert args.scopes == [scope.value]


# -- serve prints the setup link ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("host", "shown"),
    [
        ("0.0.0.0", "127.0.0.1"),
        ("::", "[::1]"),
        ("[::]", "[::1]"),
        ("::1", "[::1]"),
        ("127.0.0.1", "127.0.0.1"),
        ("localhost", "localhost"),
        ("192.168.1.20", "192.168.1.20"),
    ],
)
def test_the_setup_link_names_an_address_a_browser_here_can_open(
    host: str, shown: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    settings = make_settings(tmp_path, auth="accounts", host=host, port="8123")
    setup_announcer(settings)("/setup/abc")
    assert capsys.readouterr().err == (
        f"No account yet: open http://{shown}:8123/setup/abc to create the first "
        "administrator (or run 'talekeeper users add NAME --admin').\n"
    )


LINK = re.compile(
    r"No account yet: open (http://127\.0\.0\.1:\d+)(/setup#[A-Za-z0-9_-]{43}) to create the "
    r"first administrator \(or run 'talekeeper users add NAME --admin'\)\.\n"
)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


@pytest.fixture
def serve(tmp_path: Path) -> Iterator[tuple[subprocess.Popen[str], Cli]]:
    with ModelDouble() as double:
        cli = as_accounts(Cli(tmp_path / "data", double))
        cli.env["TALEKEEPER_PORT"] = str(free_port())
        head = [sys.executable, "-m", "talekeeper"]
        process = subprocess.Popen(
            [*head, "serve"],
            cwd=ROOT,
            env=cli.env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            encoding="utf-8",
        )
        try:
            yield process, cli
        finally:
            process.terminate()
            process.wait(timeout=30)


def test_serve_prints_the_setup_link_and_it_makes_the_first_administrator(
    serve: tuple[subprocess.Popen[str], Cli],
) -> None:
    process, cli = serve
    assert process.stderr is not None
    lines: queue.Queue[str] = queue.Queue()
    threading.Thread(target=lambda: [lines.put(x) for x in process.stderr], daemon=True).start()
    deadline, seen = time.monotonic() + 30, ""
    while (found := LINK.search(seen)) is None:
        assert time.monotonic() < deadline and process.poll() is None, seen
        try:
            seen += lines.get(timeout=0.5)
        except queue.Empty:
            continue
    base, path = found.groups()
    with httpx.Client(base_url=base, timeout=30) as browser:
        # The link is printed at startup; uvicorn listens only after startup is complete
        # and says so with "Uvicorn running on": before that a request is refused.
        while "Uvicorn running on" not in seen:
            seen += lines.get(timeout=30)
        assert browser.get(path).status_code == 200
        body = {"secret": path.removeprefix("/setup#"), "username": "mara", "password": PASSWORD}
        created = browser.post("/api/auth/setup", json=body)
        assert created.status_code == 200, created.text
        assert browser.get("/api/auth/me").json() == {
            "name": "mara",
            "admin": True,
            "mode": "accounts",
        }
        assert browser.post("/api/auth/setup", json=body).status_code == 404
    listed = cli.run("users", "list")
    assert listed.stdout == "mara  admin   enabled\n"


def test_main_refuses_a_missing_user_before_opening_anything(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("TALEKEEPER_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("TALEKEEPER_AUTH", "accounts")
    assert main(["export", "1"]) == 2
    assert "--user NAME" in capsys.readouterr().err
    assert not (tmp_path / "data").exists()
