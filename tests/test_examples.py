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

import anyio
import pytest
from mcp import Client, StdioServerParameters

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


def test_the_demo_example_spawns_the_demo_connector_by_its_installed_command() -> None:
    (connector,) = load_config(EXAMPLES / "demo.toml").connectors
    assert connector.command is not None
    assert connector.command[0] == "switchboard-demo-connector"


async def test_the_demo_example_works_where_python3_on_path_lacks_switchboard(
    tmp_path: Path,
) -> None:
    """As Claude Desktop starts it: the virtual environment is not on PATH, and the python3
    that is (/usr/bin's) cannot import switchboard. ``switchboard check`` passes and a real
    MCP client sees the demo's rooms through ``switchboard run``."""
    config = tmp_path / "demo.toml"
    config.write_text((EXAMPLES / "demo.toml").read_text(encoding="utf-8"), encoding="utf-8")
    switchboard = str(Path(sys.executable).with_name("switchboard"))
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}
    with anyio.fail_after(120):
        checked = await anyio.run_process(
            [switchboard, "check", "--config", str(config)], env=env, check=False
        )
    assert checked.returncode == 0, checked.stderr.decode()
    params = StdioServerParameters(
        command=switchboard, args=["run", "--config", str(config)], env=env
    )
    with anyio.fail_after(60):
        async with Client(params, mode="legacy") as client:
            read = await client.call_tool("inbox", {"wait_seconds": 30})
            assert not read.is_error, read.content
            listed = await client.call_tool("channel_list", {})
    assert listed.structured_content is not None
    names = {c["name"] for c in listed.structured_content["channels"]}
    assert len(names) == 3, listed.structured_content


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
