"""docs/clients.md's set-up snippets work as written (issue #11, item 7).

Each snippet is read out of the document by its ``<!-- snippet: NAME -->`` marker. A stdio
snippet's command is started, with the placeholder paths replaced by this checkout's
``switchboard`` and a config running the bundled demo connector; an HTTP snippet's URL (its
port replaced by the ephemeral one ``switchboard run`` logged) is dialled with the snippet's own
header, its ``${...}`` reference filled from the environment as the client would. Through each,
the MCP Python SDK client lists the tools and reads the inbox.

What it deliberately does not do: start Claude Desktop, Claude Code, Cursor or VS Code (none
installs in CI); the shapes are checked against what this document promises.
"""

from __future__ import annotations

import json
import re
import shlex
import sys
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import anyio
import httpx2
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

from tests.clients.test_ts_clients import INSPECTOR, http_switchboard, run_node, write_config

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

DOC = Path(__file__).resolve().parents[2] / "docs" / "clients.md"
COMMAND = "/abs/path/to/switchboard/.venv/bin/switchboard"
CONFIG = "/abs/path/to/switchboard.toml"
SNIPPET = re.compile(r"<!-- snippet: ([a-z-]+) -->\n```(\w+)\n(.*?)\n```", re.DOTALL)


def snippets() -> dict[str, str]:
    found = {name: body for name, _lang, body in SNIPPET.findall(DOC.read_text())}
    assert found, "docs/clients.md has no marked snippets"
    return found


def switchboard_command() -> str:
    command = Path(sys.executable).with_name("switchboard")
    assert command.exists(), f"{command} is missing: install the package as the README says"
    return str(command)


def stdio_entry(name: str) -> dict[str, Any]:
    """The server entry of a JSON stdio snippet (Claude Desktop, Cursor, VS Code)."""
    config = json.loads(snippets()[name])
    servers = config.get("mcpServers") or config["servers"]
    entry: dict[str, Any] = servers["switchboard"]
    return entry


async def inbox_through(params: StdioServerParameters) -> set[str]:
    async with Client(params, mode="legacy") as client:
        tools = {tool.name for tool in (await client.list_tools()).tools}
        read = await client.call_tool("inbox", {"wait_seconds": 20})
        assert not read.is_error, read.content
    return tools


@pytest.mark.parametrize("name", ["claude-desktop", "cursor-stdio", "vscode-stdio"])
async def test_a_json_stdio_snippet_starts_switchboard_for_a_real_client(
    tmp_path: Path, name: str
) -> None:
    entry = stdio_entry(name)
    assert entry["command"] == COMMAND
    assert entry["args"] == ["run", "--config", CONFIG]
    assert entry.get("type", "stdio") == "stdio"
    config = write_config(tmp_path, "stdio")
    args = [str(config) if a == CONFIG else a for a in entry["args"]]
    with anyio.fail_after(60):
        tools = await inbox_through(StdioServerParameters(command=switchboard_command(), args=args))
    assert {"inbox", "channel_publish", "channel_list"} <= tools


async def test_the_claude_code_stdio_line_starts_switchboard_for_a_real_client(
    tmp_path: Path,
) -> None:
    words = shlex.split(snippets()["claude-code-stdio"])
    assert words[:4] == ["claude", "mcp", "add", "switchboard"]
    command = words[words.index("--") + 1 :]
    assert command == [COMMAND, "run", "--config", CONFIG]
    config = write_config(tmp_path, "stdio")
    with anyio.fail_after(60):
        tools = await inbox_through(
            StdioServerParameters(
                command=switchboard_command(), args=["run", "--config", str(config)]
            )
        )
    assert "inbox" in tools


def http_targets() -> list[tuple[str, str, dict[str, str]]]:
    """(snippet, url, headers) of every HTTP snippet, as the document writes them."""
    found = snippets()
    targets: list[tuple[str, str, dict[str, str]]] = []
    words = shlex.split(found["claude-code-http"])
    header = words[words.index("--header") + 1]
    key, _, value = header.partition(": ")
    url = next(w for w in words if w.startswith("http://"))
    targets.append(("claude-code-http", url, {key: value}))
    for name in ("cursor-http", "vscode-http"):
        config = json.loads(found[name])
        entry = (config.get("mcpServers") or config["servers"])["switchboard"]
        targets.append((name, entry["url"], entry["headers"]))
    return targets


def filled(value: str, token: str) -> str:
    """A header value with the client's (or the shell's) environment reference filled in."""
    references = ("${env:SWITCHBOARD_AGENT_TOKEN}", "$SWITCHBOARD_AGENT_TOKEN")
    for reference in references:  # VS Code's and Cursor's form; the shell's
        value = value.replace(reference, token)
    assert "$" not in value, value
    return value


async def test_every_http_snippet_reaches_switchboard_with_its_own_header(tmp_path: Path) -> None:
    targets = http_targets()
    assert [name for name, _, _ in targets] == ["claude-code-http", "cursor-http", "vscode-http"]
    async with http_switchboard(tmp_path) as (live_url, token):
        live = urlsplit(live_url)
        for name, url, headers in targets:
            written = urlsplit(url)
            assert (written.scheme, written.path) == ("http", "/mcp"), name
            assert written.hostname == "127.0.0.1", name
            actual = urlunsplit(written._replace(netloc=live.netloc))
            sent = {k: filled(v, token) for k, v in headers.items()}
            with anyio.fail_after(60):
                async with (
                    httpx2.AsyncClient(headers=sent) as http,
                    Client(streamable_http_client(actual, http_client=http), mode="legacy") as c,
                ):
                    listed = {tool.name for tool in (await c.list_tools()).tools}
            assert "inbox" in listed, name


def test_the_channels_line_names_the_server_as_claude_mcp_add_registered_it() -> None:
    found = snippets()
    registered = shlex.split(found["claude-code-stdio"])[3]
    words = shlex.split(found["claude-code-channels"])
    assert words == ["claude", "--dangerously-load-development-channels", f"server:{registered}"]


def _live(words: list[str], live_url: str, token: str) -> list[str]:
    """``words`` with the documented URL's address replaced by the live one and the shell's
    ``$SWITCHBOARD_AGENT_TOKEN`` filled in, as a shell would."""
    live = urlsplit(live_url)
    out = []
    for word in words:
        if word.startswith("http://127.0.0.1:8765"):
            word = urlunsplit(urlsplit(word)._replace(netloc=live.netloc))
        out.append(filled(word, token) if "$SWITCHBOARD_AGENT_TOKEN" in word else word)
    return out


def _inspector(words: list[str]) -> list[str]:
    """The snippet's ``npx @modelcontextprotocol/inspector`` as the pinned Inspector's CLI."""
    assert words[:2] == ["npx", "@modelcontextprotocol/inspector"], words
    return [str(INSPECTOR / "cli.js"), *words[2:]]


async def test_the_inspector_cli_stdio_line_lists_the_channels(tmp_path: Path) -> None:
    words = shlex.split(snippets()["inspector-cli-stdio"])
    assert words[2] == "--cli"
    config = write_config(tmp_path, "stdio")
    args = [
        switchboard_command() if w == COMMAND else str(config) if w == CONFIG else w
        for w in _inspector(words)
    ]
    code, out, err = await run_node(args)
    assert code == 0, err
    listed = json.loads(out)
    assert listed.get("isError") is not True
    assert set(listed["structuredContent"]) >= {"channels", "servers"}


async def test_the_inspector_cli_http_line_and_the_curl_line_reach_switchboard_with_the_token(
    tmp_path: Path,
) -> None:
    found = snippets()
    inspector_words = shlex.split(found["inspector-cli-http"])
    curl_words = shlex.split(found["curl-initialize"])
    assert curl_words[0] == "curl"
    async with http_switchboard(tmp_path) as (url, token):
        code, out, err = await run_node(_inspector(_live(inspector_words, url, token)))
        assert code == 0, err
        assert "inbox" in {tool["name"] for tool in json.loads(out)["tools"]}
        with anyio.fail_after(60):
            done = await anyio.run_process(_live(curl_words, url, token), check=False)
            at = curl_words.index(next(w for w in curl_words if w.startswith("Authorization")))
            without = await anyio.run_process(
                _live(curl_words[: at - 1] + curl_words[at + 1 :], url, token), check=False
            )
    answer = done.stdout.decode()
    assert done.returncode == 0, done.stderr.decode()
    assert answer.startswith("HTTP/1.1 200"), answer[:200]
    assert "mcp-session-id:" in answer.lower()
    assert '"serverInfo"' in answer
    assert without.stdout.decode().startswith("HTTP/1.1 401")
    assert "www-authenticate: bearer" in without.stdout.decode().lower()
