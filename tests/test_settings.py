from __future__ import annotations

import re
from pathlib import Path

import pytest

from talekeeper.core.errors import ConfigurationError
from talekeeper.settings import BY_KEY, REGISTRY, SERVER_OWNED, load_settings

ROOT = Path(__file__).resolve().parent.parent


def test_defaults_play_on_the_embedded_model_with_no_endpoint() -> None:
    settings = load_settings({"TALEKEEPER_DATA_DIR": "/tmp/x"})
    assert settings.model == "embedded"
    assert settings.embedding_model == "embedded"
    assert settings.resolved_summary_model == "extractive"
    assert settings.endpoint_url == ""
    assert settings.resolved_database_url == "sqlite:////tmp/x/talekeeper.db"
    assert (settings.host, settings.port, settings.reply_tokens) == ("127.0.0.1", 8000, 200)


def test_summary_model_defaults_to_the_narrator_when_it_is_remote() -> None:
    settings = load_settings(
        {"TALEKEEPER_ENDPOINT_URL": "http://127.0.0.1:1/v1", "TALEKEEPER_MODEL": "llama3.2"}
    )
    assert settings.resolved_summary_model == "llama3.2"


@pytest.mark.parametrize(
    ("name", "value", "says"),
    [
        ("TALEKEEPER_PORT", "eighty", "whole number from 1 to 65535"),
        ("TALEKEEPER_PORT", "70000", "whole number from 1 to 65535"),
        ("TALEKEEPER_API_MODE", "chatty", "'chat', 'completion'"),
        ("TALEKEEPER_REPLY_TOKENS", "0", "from 1 to 8192"),
        ("TALEKEEPER_TEMPERATURE", "hot", "a number from 0 to 2"),
        ("TALEKEEPER_ENDPOINT_URL", "localhost:11434", "http:// or https://"),
    ],
)
def test_an_invalid_value_names_the_variable_and_what_it_accepts(
    name: str, value: str, says: str
) -> None:
    with pytest.raises(ConfigurationError) as caught:
        load_settings({name: value})
    assert name in caught.value.message
    assert says in caught.value.message


def test_a_remote_model_without_an_endpoint_is_refused_with_a_way_out() -> None:
    with pytest.raises(ConfigurationError, match="TALEKEEPER_ENDPOINT_URL is empty"):
        load_settings({"TALEKEEPER_MODEL": "llama3.2"})


def test_an_unknown_talekeeper_variable_is_refused() -> None:
    with pytest.raises(ConfigurationError, match="TALEKEEPER_MODLE"):
        load_settings({"TALEKEEPER_MODLE": "x"})


def test_per_user_overrides_apply_and_are_validated() -> None:
    base = load_settings({"TALEKEEPER_DATA_DIR": "/tmp/x"})
    mine = base.with_overrides({"reply_tokens": 80, "memory_top_k": "7"})
    assert (mine.reply_tokens, mine.memory_top_k) == (80, 7)
    assert base.reply_tokens == 200
    with pytest.raises(ConfigurationError, match="not a per-user setting"):
        base.with_overrides({"port": 9000})
    with pytest.raises(ConfigurationError, match="TALEKEEPER_MEMORY_TOP_K"):
        base.with_overrides({"memory_top_k": True})


def test_the_api_key_is_never_in_the_public_view() -> None:
    settings = load_settings({"TALEKEEPER_API_KEY": "sk-secret"})
    public = settings.public()
    assert public["api_key_set"] is True
    assert "sk-secret" not in repr(public) and "sk-secret" not in repr(settings)


def test_every_setting_is_in_the_configuration_table_of_docs_configuration_md() -> None:
    page = (ROOT / "docs" / "configuration.md").read_text()
    table_rows = set(re.findall(r"^\| `(TALEKEEPER_[A-Z_]+)`", page, flags=re.M))
    missing = [s.env for s in REGISTRY if s.env not in table_rows]
    assert not missing, f"docs/configuration.md's table of settings lacks {missing}"
    assert all(s.help for s in REGISTRY)


def test_a_password_in_a_url_never_reaches_a_message_or_a_repr() -> None:
    with pytest.raises(ConfigurationError) as refused:
        load_settings({"TALEKEEPER_ENDPOINT_URL": "ftp://player:hunter2@example.test/v1"})
    assert "hunter2" not in refused.value.message and "player" not in refused.value.message
    settings = load_settings(
        {
            "TALEKEEPER_ENDPOINT_URL": "http://player:hunter2@127.0.0.1:11434/v1",
            "TALEKEEPER_DATABASE_URL": "postgresql+psycopg://tk:s3cret@db.test/tk",
        }
    )
    assert "hunter2" not in repr(settings) and "s3cret" not in repr(settings)


def test_the_test_harness_variables_are_not_taken_for_settings() -> None:
    """CI sets the harness's own variables for the whole run, the CLI's settings read included.

    Under the settings' prefix they would be refused as unknown settings by every command.
    """
    from talekeeper_testkit import pg

    harness = {pg.REQUIRE_ENV: "1", pg.BIN_ENV: "/usr/lib/postgresql/15/bin"}
    ci_script = (Path(__file__).parent.parent / ".ci" / "run").read_text()
    exported = set(re.findall(r"^export (\w+)=", ci_script, flags=re.M))
    assert exported, "the CI script exports the variables the run needs"
    load_settings(harness | dict.fromkeys(exported, "1"))


def test_the_endpoint_and_its_key_are_the_servers_in_accounts_mode() -> None:
    """Declared on the settings themselves, read by both the composition root (a user's
    saved overrides of them are ignored) and the settings route (a body setting them is
    refused): a player may not point the server at a URL of their choosing."""
    assert {"endpoint_url", "api_key"} == SERVER_OWNED
    assert all(BY_KEY[key].per_user for key in SERVER_OWNED)  # each player's in local mode


def test_the_world_model_is_the_rules_unless_a_model_at_an_endpoint_is_named() -> None:
    assert load_settings({}).world_model == "rules"
    with pytest.raises(ConfigurationError, match="TALEKEEPER_WORLD_MODEL"):
        load_settings({"TALEKEEPER_WORLD_MODEL": "qwen2.5:7b"})  # no endpoint to ask
    with pytest.raises(ConfigurationError, match="too small to read the world"):
        load_settings({"TALEKEEPER_WORLD_MODEL": "embedded"})
    named = load_settings(
        {"TALEKEEPER_WORLD_MODEL": "qwen2.5:7b", "TALEKEEPER_ENDPOINT_URL": "http://127.0.0.1:1/v1"}
    )
    assert named.world_model == "qwen2.5:7b"
