"""The config's grant: the default covers real chat connectors, and nothing unservable is
accepted (issue #10, part 1)."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from switchboard.config import DEFAULT_GRANT, ConfigError, expand_env, load_config


def _config_with_grant(tmp_path: Path, grant: str) -> Path:
    path = tmp_path / "switchboard.toml"
    path.write_text(f'[[connectors]]\nid = "chat"\ncommand = ["x"]\ngrant = {grant}\n')
    return path


def test_the_default_grant_covers_channels_push_events_tools_and_inference(
    tmp_path: Path,
) -> None:
    path = tmp_path / "switchboard.toml"
    path.write_text('[[connectors]]\nid = "chat"\ncommand = ["x"]\n')
    (connector,) = load_config(path).connectors
    assert connector.grant == list(DEFAULT_GRANT)
    assert {"tools", "pushEvents", "channels.publish", "channels.incoming"} <= set(DEFAULT_GRANT)
    assert {"inferenceRequest", "modelInfo", "inferenceLifecycle"} <= set(DEFAULT_GRANT)
    # MCPL §13.4: a connector never adds to the system position unless the operator says so.
    assert "contextHooks.beforeInference.inject.system" not in DEFAULT_GRANT


@pytest.mark.parametrize(
    "entry", ["inferenceRequest", "inferenceRequest.*", "modelInfo", "inferenceLifecycle"]
)
def test_a_grant_entry_of_the_inference_leaves_is_accepted_now_that_they_are_served(
    tmp_path: Path, entry: str
) -> None:
    path = _config_with_grant(tmp_path, f'["channels.*", "{entry}"]')
    (connector,) = load_config(path).connectors
    assert entry in connector.grant


def test_inference_agent_must_name_a_configured_agent(tmp_path: Path) -> None:
    path = tmp_path / "switchboard.toml"
    path.write_text(
        '[agent]\nname = "resident"\n'
        '[[connectors]]\nid = "chat"\ncommand = ["x"]\ninference_agent = "@nobody"\n'
    )
    with pytest.raises(ConfigError) as caught:
        load_config(path)
    text = str(caught.value)
    assert "'@nobody' names no configured agent" in text
    assert "@resident" in text


def test_inference_agent_is_written_as_a_handle(tmp_path: Path) -> None:
    path = tmp_path / "switchboard.toml"
    path.write_text('[[connectors]]\nid = "chat"\ncommand = ["x"]\ninference_agent = "agent"\n')
    with pytest.raises(ConfigError, match="is not an agent handle"):
        load_config(path)


def test_inference_agent_and_its_bounds_are_read(tmp_path: Path) -> None:
    path = tmp_path / "switchboard.toml"
    path.write_text(
        '[agent]\nname = "resident"\n'
        '[[connectors]]\nid = "chat"\ncommand = ["x"]\ninference_agent = "@resident"\n'
        "inference_timeout = 5\nmax_inference_requests = 3\n"
    )
    (connector,) = load_config(path).connectors
    assert (connector.inference_agent, connector.inference_timeout) == ("@resident", 5.0)
    assert connector.max_inference_requests == 3


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


# ${NAME:-default} and env_file (issue #13).

_NAMES = st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,8}", fullmatch=True)
_TEXT = st.text(
    alphabet=st.characters(exclude_characters="}$", exclude_categories=["Cs"]), max_size=12
)


@given(name=_NAMES, value=st.none() | _TEXT, default=_TEXT, before=_TEXT, after=_TEXT)
def test_a_default_is_used_exactly_when_the_variable_is_unset_or_empty(
    name: str, value: str | None, default: str, before: str, after: str
) -> None:
    env = {} if value is None else {name: value}
    data = expand_env({"k": f"{before}${{{name}:-{default}}}{after}"}, env)
    assert data == {"k": f"{before}{value or default}{after}"}


@given(name=_NAMES, value=_TEXT)
def test_a_value_that_looks_like_a_reference_is_never_expanded_again(name: str, value: str) -> None:
    env = {name: "${" + name + "}" + value}
    assert expand_env({"k": f"${{{name}:-x}}"}, env) == {"k": "${" + name + "}" + value}


@given(text=_TEXT)
def test_text_without_a_dollar_is_unchanged(text: str) -> None:
    assert expand_env({"k": text, "n": [text]}, {}) == {"k": text, "n": [text]}


def test_a_doubled_dollar_before_a_default_form_stays_literal(tmp_path: Path) -> None:
    path = _write(tmp_path, '[[connectors]]\nid = "x"\ncommand = ["$${A:-b}", "${A:-b}"]\n')
    (connector,) = load_config(path, env={}).connectors
    assert connector.command == ["${A:-b}", "b"]


def test_an_env_file_feeds_references_and_the_real_environment_wins(tmp_path: Path) -> None:
    (tmp_path / "secrets.env").write_text(
        "# secrets\nexport CHAT_TOKEN='from-file'\nPORT=\"9001\"  # the port\nID=file-id\n"
    )
    path = _write(
        tmp_path,
        'env_file = "secrets.env"\n[[connectors]]\nid = "${ID}"\nurl = "tcp://127.0.0.1:${PORT}"\n'
        'env = { CHAT_TOKEN = "${CHAT_TOKEN}" }\n',
    )
    config = load_config(path, env={"ID": "real-id"})
    (connector,) = config.connectors
    assert connector.id == "real-id"
    assert connector.url == "tcp://127.0.0.1:9001"
    assert connector.env == {"CHAT_TOKEN": "from-file"}
    assert config.env_file == str(tmp_path / "secrets.env")


def test_the_env_file_path_may_itself_use_the_environment(tmp_path: Path) -> None:
    (tmp_path / "prod.env").write_text("X=1\n")
    path = _write(tmp_path, 'env_file = "${DIR}/prod.env"\nlog_level = "${LEVEL:-info}"\n')
    config = load_config(path, env={"DIR": str(tmp_path)})
    assert config.log_level == "INFO"


def test_a_log_level_in_any_case_is_accepted_as_its_upper_case(tmp_path: Path) -> None:
    assert load_config(_write(tmp_path, 'log_level = "warning"\n')).log_level == "WARNING"


@pytest.mark.parametrize(
    "url", ["tcp://127.0.0.1:9000", "ws://localhost/mcpl", "wss://chat.example:443/x"]
)
def test_the_schemes_switchboard_dials_are_accepted(tmp_path: Path, url: str) -> None:
    path = _write(tmp_path, f'[[connectors]]\nid = "x"\nurl = "{url}"\n')
    assert load_config(path).connectors[0].url == url


@pytest.mark.parametrize("entry", ["channels.*", "*", "*.*", "contextHooks.*.*", "tools"])
def test_grant_patterns_that_match_a_capability_path_are_accepted(
    tmp_path: Path, entry: str
) -> None:
    assert load_config(_config_with_grant(tmp_path, f'["{entry}"]')).connectors[0].grant == [entry]


@pytest.mark.parametrize("home", ["discord:general", "#general", "@ada", "1234567890"])
def test_home_names_as_channel_list_shows_them_are_accepted(tmp_path: Path, home: str) -> None:
    assert load_config(_write(tmp_path, f'[agent]\nhome = "{home}"\n')).agent.home == home


@pytest.mark.parametrize("home", [" general", "a\\nb", "discord:", ":general", "#"])
def test_a_home_that_is_no_channel_name_is_refused(tmp_path: Path, home: str) -> None:
    with pytest.raises(ConfigError, match="home"):
        load_config(_write(tmp_path, f'[agent]\nhome = "{home}"\n'))
