"""The config's grant: the default covers real chat connectors, and nothing unservable is
accepted (issue #10, part 1)."""

from __future__ import annotations

from pathlib import Path

import pytest

from switchboard.config import DEFAULT_GRANT, UNSERVED_LEAVES, ConfigError, load_config


def _config_with_grant(tmp_path: Path, grant: str) -> Path:
    path = tmp_path / "switchboard.toml"
    path.write_text(f'[[connectors]]\nid = "chat"\ncommand = ["x"]\ngrant = {grant}\n')
    return path


def test_the_default_grant_covers_channels_push_events_and_tools(tmp_path: Path) -> None:
    path = tmp_path / "switchboard.toml"
    path.write_text('[[connectors]]\nid = "chat"\ncommand = ["x"]\n')
    (connector,) = load_config(path).connectors
    assert connector.grant == list(DEFAULT_GRANT)
    assert {"tools", "pushEvents", "channels.publish", "channels.incoming"} <= set(DEFAULT_GRANT)
    assert set(DEFAULT_GRANT).isdisjoint(UNSERVED_LEAVES)


@pytest.mark.parametrize(
    "entry", ["inferenceRequest", "inferenceRequest.*", "modelInfo", "inferenceLifecycle"]
)
def test_a_grant_entry_that_can_only_grant_what_switchboard_cannot_serve_is_refused(
    tmp_path: Path, entry: str
) -> None:
    path = _config_with_grant(tmp_path, f'["channels.*", "{entry}"]')
    with pytest.raises(ConfigError) as caught:
        load_config(path)
    text = str(caught.value)
    assert repr(entry) in text
    assert "cannot serve" in text
    assert "remove it from `grant`" in text


def test_the_refusal_says_why_the_leaf_cannot_be_served(tmp_path: Path) -> None:
    path = _config_with_grant(tmp_path, '["inferenceRequest"]')
    with pytest.raises(ConfigError, match="answers inference/request with -32601"):
        load_config(path)


def test_a_wildcard_that_also_matches_servable_leaves_is_accepted(tmp_path: Path) -> None:
    """``*`` matches tools and pushEvents too; the session leaves the unservable ones out."""
    path = _config_with_grant(tmp_path, '["*", "*.*"]')
    (connector,) = load_config(path).connectors
    assert connector.grant == ["*", "*.*"]


# ${NAME} expansion (issues #11 and #13): every string value, from the environment.


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "switchboard.toml"
    path.write_text(text)
    return path


def test_every_string_value_expands_environment_references(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        '[agent]\ntransport = "http"\ntoken = "${SB_TOKEN}"\n'
        '[[connectors]]\nid = "${SB_ID}"\ncommand = ["node", "${SB_DIR}/index.js"]\n'
        'env = { DISCORD_TOKEN = "${SB_SECRET}" }\n',
    )
    env = {
        "SB_TOKEN": "t" * 20,
        "SB_ID": "chat",
        "SB_DIR": "/opt/bridge",
        "SB_SECRET": "s3cret",
    }
    config = load_config(path, env=env)
    assert config.agent.token is not None
    assert config.agent.token.get_secret_value() == "t" * 20
    (connector,) = config.connectors
    assert connector.id == "chat"
    assert connector.command == ["node", "/opt/bridge/index.js"]
    assert connector.env == {"DISCORD_TOKEN": "s3cret"}


def test_a_doubled_dollar_is_a_literal_and_other_dollars_stay(tmp_path: Path) -> None:
    path = _write(
        tmp_path, '[[connectors]]\nid = "x"\ncommand = ["sh", "-c", "echo $${HOME} $HOME $$"]\n'
    )
    (connector,) = load_config(path, env={"HOME": "/root"}).connectors
    assert connector.command == ["sh", "-c", "echo ${HOME} $HOME $$"]


def test_a_value_is_expanded_once_and_keys_never(tmp_path: Path) -> None:
    path = _write(
        tmp_path, '[[connectors]]\nid = "x"\ncommand = ["a"]\nenv = { "${K}" = "${V}" }\n'
    )
    (connector,) = load_config(path, env={"K": "no", "V": "${K}"}).connectors
    assert connector.env == {"${K}": "${K}"}


def test_an_unset_variable_is_refused_naming_it_and_its_key(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        '[agent]\ntoken = "${SWITCHBOARD_AGENT_TOKEN}"\n'
        '[[connectors]]\nid = "x"\ncommand = ["a"]\nenv = { T = "${CHAT_TOKEN}" }\n',
    )
    with pytest.raises(ConfigError) as caught:
        load_config(path, env={})
    text = str(caught.value)
    assert str(path) in text
    assert "agent.token: the environment variable SWITCHBOARD_AGENT_TOKEN is not set" in text
    assert "connectors.0.env.T: the environment variable CHAT_TOKEN is not set" in text
    assert "$${" in text


@pytest.mark.parametrize("value", ["${", "${1X}", "${A-B}", "${ A }"])
def test_a_dollar_brace_that_is_not_a_reference_is_refused(tmp_path: Path, value: str) -> None:
    path = _write(tmp_path, f'[[connectors]]\nid = "x"\ncommand = ["{value}"]\n')
    with pytest.raises(ConfigError, match=r"connectors\.0\.command\.0: `\$\{` does not start"):
        load_config(path, env={"A": "1", "1X": "2"})


def test_the_process_environment_is_the_default(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SB_CONNECTOR_ID", "from-env")
    path = _write(tmp_path, '[[connectors]]\nid = "${SB_CONNECTOR_ID}"\ncommand = ["a"]\n')
    (connector,) = load_config(path).connectors
    assert connector.id == "from-env"
