"""The bridge's configuration: the ``MATRIX_*`` names are a contract, every mistake is named
with its fix (all at once), and a token file others may read is refused."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from switchboard.connectors.matrix import ENV_NAMES, ConfigProblems, load_config
from switchboard.connectors.matrix.config import read_token_file

DOC = Path(__file__).resolve().parents[3] / "docs" / "bridges" / "matrix.md"
BRIDGE = str(Path(sys.executable).with_name("switchboard-matrix"))

BASE = {
    "MATRIX_HOMESERVER": "https://matrix.example.org/",
    "MATRIX_USER_ID": "@bot:example.org",
    "MATRIX_ACCESS_TOKEN": "syt_secret",
}


def test_every_variable_the_bridge_reads_is_documented() -> None:
    doc = DOC.read_text()
    assert [name for name in ENV_NAMES if f"`{name}`" not in doc] == []
    assert {"MATRIX_HOMESERVER", "MATRIX_USER_ID", "MATRIX_ACCESS_TOKEN"} <= set(ENV_NAMES)
    assert {"MATRIX_ACCESS_TOKEN_FILE", "MATRIX_PASSWORD", "MATRIX_STATE_DIR"} <= set(ENV_NAMES)


def test_the_three_required_settings_are_enough_and_the_rest_have_defaults(
    tmp_path: Path,
) -> None:
    config = load_config({**BASE, "XDG_STATE_HOME": str(tmp_path)})
    assert config.homeserver == "https://matrix.example.org"
    assert config.access_token == "syt_secret"
    assert config.state_dir == tmp_path / "switchboard-matrix" / "@bot:example.org"
    assert config.accept_invites.allows("@ann:example.org")
    assert not config.accept_invites.allows("@eve:elsewhere.net")
    assert config.join_on_open
    assert (config.sync_timeout_ms, config.timeline_limit) == (30_000, 50)


def test_every_mistake_is_reported_at_once_with_its_fix() -> None:
    with pytest.raises(ConfigProblems) as raised:
        load_config(
            {
                "MATRIX_HOMESERVER": "matrix.example.org",
                "MATRIX_USER_ID": "bot",
                "MATRIX_TIMELINE_LIMIT": "0",
                "MATRIX_RETRY_MAX_SECONDS": "soon",
                "MATRIX_JOIN_ON_OPEN": "maybe",
                "MATRIX_LOG_LEVEL": "loud",
            }
        )
    text = "\n".join(raised.value.problems)
    assert len(raised.value.problems) == 7
    for expected in (
        "MATRIX_HOMESERVER: 'matrix.example.org' is not an http:// or https:// URL",
        "MATRIX_USER_ID: 'bot' is not a user id; write @name:server",
        "no credential: set MATRIX_ACCESS_TOKEN, MATRIX_ACCESS_TOKEN_FILE",
        "MATRIX_TIMELINE_LIMIT: 0 is below 1",
        "MATRIX_RETRY_MAX_SECONDS: 'soon' is not a number of seconds",
        "MATRIX_JOIN_ON_OPEN: 'maybe' is not true or false",
        "MATRIX_LOG_LEVEL: 'LOUD' is not one of",
    ):
        assert expected in text


def test_two_credentials_at_once_are_refused_rather_than_guessed() -> None:
    with pytest.raises(ConfigProblems, match="MATRIX_ACCESS_TOKEN and MATRIX_PASSWORD"):
        load_config({**BASE, "MATRIX_PASSWORD": "hunter2"})


@pytest.mark.parametrize(
    ("value", "allowed", "refused"),
    [
        ("none", [], ["@ann:example.org"]),
        ("*", ["@eve:elsewhere.net", "@ann:example.org"], []),
        (
            "@eve:elsewhere.net, partner.org",
            ["@eve:elsewhere.net", "@x:partner.org"],
            ["@ann:example.org", "@x:elsewhere.net"],
        ),
    ],
)
def test_invitations_are_accepted_only_from_whom_the_configuration_names(
    value: str, allowed: list[str], refused: list[str]
) -> None:
    policy = load_config({**BASE, "MATRIX_ACCEPT_INVITES": value}).accept_invites
    assert [user for user in allowed if not policy.allows(user)] == []
    assert [user for user in refused if policy.allows(user)] == []


def test_an_invitation_entry_that_is_neither_user_nor_server_is_refused() -> None:
    with pytest.raises(ConfigProblems, match="neither a user id"):
        load_config({**BASE, "MATRIX_ACCEPT_INVITES": "ann at example.org"})


def test_a_token_file_others_may_read_is_refused_with_the_chmod_to_run(tmp_path: Path) -> None:
    token = tmp_path / "token"
    token.write_text("syt_from_file\n")
    token.chmod(0o644)
    with pytest.raises(ConfigProblems, match=f"mode 644.*chmod 600 {token}"):
        read_token_file(token)
    token.chmod(0o600)
    assert read_token_file(token) == "syt_from_file"
    with pytest.raises(ConfigProblems, match="cannot be read"):
        read_token_file(tmp_path / "missing")


def test_the_command_stops_with_exit_code_2_and_one_line_per_problem() -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MATRIX_")}
    env["MATRIX_USER_ID"] = "@bot:example.org"
    done = subprocess.run(
        [BRIDGE], env=env, capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 2
    assert done.stdout == ""  # stdout is the MCPL wire: nothing but JSON-RPC may go there
    lines = done.stderr.strip().splitlines()
    assert lines == [
        "switchboard-matrix: MATRIX_HOMESERVER is not set; set it to the homeserver's URL",
        "switchboard-matrix: no credential: set MATRIX_ACCESS_TOKEN, MATRIX_ACCESS_TOKEN_FILE "
        "(mode 600) or MATRIX_PASSWORD",
    ]
