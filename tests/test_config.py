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
