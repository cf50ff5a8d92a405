"""The shipped example configs (``examples/*.toml``) load, and docs/compatibility.md names
exactly those files (issue #10: "each example config is loaded by a test").

What this module knows: where the examples and the compatibility doc live, and that
``switchboard run --config`` reads a file with :func:`switchboard.config.load_config`. What it
deliberately doesn't: whether the real connectors the examples name are installed; it never
spawns them.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from switchboard.config import load_config
from switchboard.events import ChannelsRegistered, ConnectorReady
from tests.helpers import Recorder, running_board

__all__: list[str] = []

pytestmark = pytest.mark.anyio

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
COMPATIBILITY = ROOT / "docs" / "compatibility.md"
EXAMPLE_FILES = sorted(EXAMPLES.glob("*.toml"))


def _named_in_compatibility_doc() -> set[str]:
    text = COMPATIBILITY.read_text(encoding="utf-8")
    return set(re.findall(r"examples/([A-Za-z0-9_.-]+\.toml)", text))


def test_the_examples_folder_holds_configs_including_the_demo() -> None:
    names = {path.name for path in EXAMPLE_FILES}
    assert "demo.toml" in names
    assert len(names) >= 10, names


@pytest.mark.parametrize("path", EXAMPLE_FILES, ids=lambda path: path.name)
def test_each_example_loads_as_switchboard_run_would_load_it(path: Path) -> None:
    config = load_config(path)
    assert len(config.connectors) == 1
    (connector,) = config.connectors
    if connector.url is not None:
        host = urlsplit(connector.url).hostname
        assert host in ("127.0.0.1", "::1", "localhost"), f"{path.name} dials {host}"


def test_the_demo_example_spawns_the_bundled_demo_connector() -> None:
    (connector,) = load_config(EXAMPLES / "demo.toml").connectors
    assert connector.command is not None
    assert connector.command[1:3] == ["-m", "switchboard.connectors.demo"]


async def test_the_demo_example_as_written_connects_and_registers_its_rooms(
    tmp_path: Path,
) -> None:
    """Only the interpreter is swapped for this one; grant, args and id are the file's."""
    (connector,) = load_config(EXAMPLES / "demo.toml").connectors
    assert connector.command is not None
    spawned = connector.model_copy(update={"command": [sys.executable, *connector.command[1:]]})
    recorder = Recorder()
    async with running_board(tmp_path, spawned, recorder=recorder):
        ready = await recorder.wait_kind(ConnectorReady)
        registered = await recorder.wait_kind(ChannelsRegistered)
    assert ready.server_id == "demo"
    assert "channels.register" in ready.grant
    assert not ready.legacy_policy
    assert registered.server_id == "demo"
    assert len(registered.channel_ids) == 3


def test_the_compatibility_doc_names_every_example_and_only_existing_ones() -> None:
    named = _named_in_compatibility_doc()
    present = {path.name for path in EXAMPLE_FILES}
    assert named == present, {"missing from doc": present - named, "no such file": named - present}


def test_the_starting_config_spawns_the_demo_connector_by_its_command_name() -> None:
    (connector,) = load_config(EXAMPLES / "switchboard.toml", env={}).connectors
    assert connector.command is not None
    assert connector.command[0] == "switchboard-demo-connector"
    assert connector.command[-1] == "2"  # ${DEMO_INTERVAL:-2}


async def test_the_starting_config_as_written_connects_through_the_entry_point(
    tmp_path: Path,
) -> None:
    """The console script is found beside this interpreter even when it is not on PATH."""
    from switchboard.config.check import machine_problems

    config = load_config(EXAMPLES / "switchboard.toml")
    (connector,) = config.connectors
    assert machine_problems(config) == []
    recorder = Recorder()
    async with running_board(tmp_path, connector, recorder=recorder):
        ready = await recorder.wait_kind(ConnectorReady)
        registered = await recorder.wait_kind(ChannelsRegistered)
    assert ready.server_id == registered.server_id == "demo"


def test_the_systemd_unit_runs_switchboard_sandboxed() -> None:
    unit = (EXAMPLES / "switchboard.service").read_text(encoding="utf-8")
    settings = {
        line.partition("=")[0]
        for line in unit.splitlines()
        if line and not line.startswith(("#", "["))
    }
    assert {
        "ExecStart",
        "DynamicUser",
        "ProtectSystem",
        "ProtectHome",
        "PrivateTmp",
        "NoNewPrivileges",
        "StateDirectory",
        "ReadWritePaths",
        "RestrictAddressFamilies",
        "SystemCallFilter",
        "RestartPreventExitStatus",
    } <= settings
    assert "ProtectSystem=strict" in unit
    assert "SystemCallFilter=@system-service" in unit
    assert "switchboard check --config" in unit


CLUSTER = EXAMPLES / "cluster"


def test_the_cluster_examples_are_three_instances_differing_only_in_name_and_port(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("RESIDENT_TOKEN", "resident-token-0123456789abcdefghij")
    monkeypatch.setenv("RESEARCHER_TOKEN", "researcher-token-0123456789abcdefgh")
    configs = [load_config(CLUSTER / f"sb-{n}.toml") for n in (1, 2, 3)]
    ids, ports = set(), set()
    for config in configs:
        assert config.store.backend == "postgres"
        assert config.cluster is not None
        ids.add(config.cluster.instance_id)
        ports.add(config.agent.port)
        assert config.connectors == configs[0].connectors
        assert config.agents == configs[0].agents
    assert ids == {"sb-1", "sb-2", "sb-3"}
    assert len(ports) == 3


def test_the_load_balancer_snippets_keep_an_agent_on_one_instance_by_its_token() -> None:
    haproxy = (CLUSTER / "haproxy.cfg").read_text(encoding="utf-8")
    assert re.search(r"^\s*balance hdr\(Authorization\)$", haproxy, re.M)
    assert re.search(r"^\s*hash-type consistent$", haproxy, re.M)
    nginx = (CLUSTER / "nginx.conf").read_text(encoding="utf-8")
    assert "hash $http_authorization consistent;" in nginx
    for text in (haproxy, nginx):
        servers = set(re.findall(r"127\.0\.0\.1:(87\d\d)", text))
        assert {"8765", "8766", "8767"} <= servers
