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
    """With the environment variables it names set, as its comments and docs/bridges ask."""
    named = set(re.findall(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}", path.read_text(encoding="utf-8")))
    config = load_config(path, env={name: f"set-{name.lower()}" for name in named})
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


BRIDGES = ROOT / "docs" / "bridges"
REPOSITORIES = {
    "discord-mcpl": "https://github.com/anima-research/discord-mcpl",
    "zulip_mcp": "https://github.com/Anarchid/zulip_mcp",
    "matrix_mcpl": "https://github.com/almostmachines/matrix_mcpl",
}


def _with_env(text: str) -> dict[str, str]:
    names = set(re.findall(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}", text))
    return {name: f"set-{name.lower()}" for name in names}


@pytest.mark.parametrize("name", sorted(REPOSITORIES))
def test_each_real_connector_asked_for_first_has_a_page_from_install_to_a_running_config(
    name: str, tmp_path: Path
) -> None:
    """docs/bridges/<name>.md links the connector's repository, says how to install it, how to
    make the bot and its token, gives the config (the example file's own connector table, so
    the two cannot drift), what works, and honestly what it was checked against."""
    page = (BRIDGES / f"{name}.md").read_text(encoding="utf-8")
    assert REPOSITORIES[name] in page
    assert f"git clone {REPOSITORIES[name]}" in page
    for heading in ("## 1. Install the connector", "## 3. The config", "## 4. What works"):
        assert heading in page, heading
    making = page.split("## 2. ", 1)[1].split("## 3.", 1)[0]
    assert re.search(r"token|API key", making), "step 2 makes the bot's credential"
    assert "**Checked against:**" in page
    assert f"examples/{name}.toml" in page
    (block,) = re.findall(r"```toml\n(.*?)\n```", page, re.DOTALL)
    documented = tmp_path / "documented.toml"
    documented.write_text(block, encoding="utf-8")
    example = (EXAMPLES / f"{name}.toml").read_text(encoding="utf-8")
    (shown,) = load_config(documented, env=_with_env(block)).connectors
    (real,) = load_config(EXAMPLES / f"{name}.toml", env=_with_env(example)).connectors
    assert shown.model_dump() == {**real.model_dump(), "cwd": shown.cwd}
    assert f"(bridges/{name}.md)" in COMPATIBILITY.read_text(encoding="utf-8")


def test_the_matrix_mcpl_page_links_our_own_bridge_page_instead_of_repeating_it() -> None:
    page = (BRIDGES / "matrix_mcpl.md").read_text(encoding="utf-8")
    assert "(matrix.md#create-the-bot-user)" in page
    assert "register_new_matrix_user" not in page


def test_every_connector_row_says_what_it_was_checked_against() -> None:
    lines = COMPATIBILITY.read_text(encoding="utf-8").splitlines()
    header = next(line for line in lines if line.startswith("| connector | dialect |"))
    columns = [c.strip() for c in header.strip("|").split("|")]
    at = columns.index("checked against")
    start = lines.index(header) + 2
    rows = [line for line in lines[start:] if line.startswith("| ")][:10]
    assert len(rows) == 10
    for row in rows:
        cells = [c.strip() for c in row.strip().strip("|").split(" | ")]
        assert len(cells) == len(columns), cells[0]
        assert cells[at], cells[0]
