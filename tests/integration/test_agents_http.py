"""Several agent identities on one Switchboard: one HTTP endpoint, one stdio session each (issue
#12, items 1 and 6).

Over streamable HTTP the bearer token says which agent a request is: each agent has its own MCP
server and session manager, a session id belongs to the agent that opened it, and a session
attached marks the agent online in the directory. Over stdio, ``switchboard run --agent @name``
picks the agent.

Which agent a client is shows in ``speak``'s description, which follows the agent's prose mode:
``@a`` has prose ``disabled`` and ``@b`` prose ``locus``.

The HTTP tests serve a real host (:meth:`Switchboard.started`, a real store file) on a real
loopback socket with the server ``switchboard run`` builds (:func:`switchboard.app.serve.
agent_servers`), so they can watch the host's attachments; one runs ``switchboard run`` itself.
The clients are real ``mcp`` SDK clients.
"""

from __future__ import annotations

import hashlib
import json
import re
import sys
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

from switchboard.agents.http import AgentServers, bind_endpoint, plan_endpoint, serve_endpoint
from switchboard.agents.roster.attach import Attachments
from switchboard.agents.roster.roster import Identity, Roster, token_digest
from switchboard.agents.tools.channel_tools import SPEAK_DESCRIPTIONS
from switchboard.app.board import Switchboard
from switchboard.app.serve import agent_servers
from switchboard.config import AgentConfig, AgentEntry, Config
from switchboard.directory import Directory, DirectoryStore, NameTaken, NotFound, export_snapshot
from tests.helpers import suite_store_config

pytestmark = pytest.mark.anyio

TOKENS = {"a": "tok-a-" + "1a2b3c4d5e6f7g8h9i0j", "b": "tok-b-" + "k1l2m3n4o5p6q7r8s9t0"}
TASK_TOKEN = "tok-c-" + "u1v2w3x4y5z6a7b8c9d0"
SECRETS = [
    *TOKENS.values(),
    TASK_TOKEN,
    *(hashlib.sha256(t.encode()).hexdigest() for t in [*TOKENS.values(), TASK_TOKEN]),
]
INITIALIZE: Mapping[str, Any] = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "test", "version": "0"},
    },
}
INITIALIZED: Mapping[str, Any] = {"jsonrpc": "2.0", "method": "notifications/initialized"}
LIST_TOOLS: Mapping[str, Any] = {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}
VERSION = {"mcp-protocol-version": "2025-06-18"}
MCP_HEADERS = {"Accept": "application/json, text/event-stream"}


def _agents(*, with_tokens: bool = True) -> list[AgentEntry]:
    def token(name: str) -> dict[str, Any]:
        return {"token": TOKENS[name]} if with_tokens else {}

    return [
        AgentEntry(handle="@a", prose="disabled", roles=["default_delivery"], **token("a")),
        AgentEntry(handle="@b", prose="locus", **token("b")),
    ]


def _http_config(tmp_path: Path) -> Config:
    return Config(
        store=suite_store_config(tmp_path),
        agent=AgentConfig(transport="http", port=0),
        agents=_agents(),
    )


def _listed(directory: DirectoryStore, *handles: str) -> None:
    """List ``handles`` (as the host does for configured agents; a listing already there is
    kept)."""
    for handle in handles:
        try:
            directory.lookup(handle)
        except NotFound:
            with suppress(NameTaken):
                directory.register(handle, description=f"agent {handle}")


@dataclass
class Watched:
    """The host's attachments as the endpoint sees them, with a way to wait for a change."""

    inner: Attachments
    _changed: anyio.Event = field(default_factory=anyio.Event)

    def attach(self, name: str) -> None:
        self.inner.attach(name)
        self._poke()

    def detach(self, name: str) -> None:
        self.inner.detach(name)
        self._poke()

    def touch(self, name: str) -> None:
        self.inner.touch(name)

    def _poke(self) -> None:
        self._changed.set()
        self._changed = anyio.Event()

    async def until(self, holds: Callable[[], bool], *, within: float = 20) -> None:
        with anyio.fail_after(within):
            while not holds():
                await self._changed.wait()


@asynccontextmanager
async def _endpoint(tmp_path: Path) -> AsyncIterator[tuple[Switchboard, Watched, str]]:
    """A host serving ``@a`` and ``@b`` on a loopback endpoint, as ``switchboard run`` does."""
    config = _http_config(tmp_path)
    plan = plan_endpoint(config.agent, config.agents)
    sock = bind_endpoint(plan)
    url = plan.url(sock.getsockname()[1])
    async with Switchboard.started(config) as board, anyio.create_task_group() as group:
        _listed(board.directory, "@a", "@b")
        watched = Watched(board.attachments)
        servers = agent_servers(board)
        served = AgentServers(servers.identities, servers.build, sessions=watched)
        group.start_soon(serve_endpoint, served, plan, sock)
        try:
            yield board, watched, url
        finally:
            group.cancel_scope.cancel()


@asynccontextmanager
async def _client(url: str, token: str) -> AsyncIterator[Client]:
    async with (
        httpx2.AsyncClient(timeout=30, headers={"Authorization": f"Bearer {token}"}) as http,
        Client(streamable_http_client(url, http_client=http), mode="legacy") as client,
    ):
        yield client


async def _speak_description(client: Client) -> str:
    listed = await client.list_tools()
    (speak,) = [tool for tool in listed.tools if tool.name == "speak"]
    assert speak.description is not None
    return speak.description


async def _post(url: str, body: Mapping[str, Any], headers: Mapping[str, str]) -> httpx2.Response:
    async with httpx2.AsyncClient(timeout=30) as http:
        return await http.post(url, json=dict(body), headers={**MCP_HEADERS, **headers})


def _bearer(name: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {TOKENS[name]}"}


async def test_each_clients_calls_act_as_the_agent_its_token_proves(tmp_path: Path) -> None:
    async with _endpoint(tmp_path) as (_board, _watched, url):
        with anyio.fail_after(30):
            async with _client(url, TOKENS["a"]) as a, _client(url, TOKENS["b"]) as b:
                seen_by_a = await _speak_description(a)
                seen_by_b = await _speak_description(b)
                spoken = await a.call_tool("speak", {"text": "hello"})
    assert seen_by_a == SPEAK_DESCRIPTIONS["disabled"]
    assert seen_by_b == SPEAK_DESCRIPTIONS["locus"]
    assert (spoken.structured_content or {})["mode"] == "disabled"


async def test_an_agent_cannot_use_another_agents_session_id(tmp_path: Path) -> None:
    async with _endpoint(tmp_path) as (_board, _watched, url):
        with anyio.fail_after(30):
            opened = await _post(url, INITIALIZE, _bearer("a"))
            session = {"mcp-session-id": opened.headers["mcp-session-id"], **VERSION}
            initialized = await _post(url, INITIALIZED, {**_bearer("a"), **session})
            as_b = await _post(url, LIST_TOOLS, {**_bearer("b"), **session})
            anonymous = await _post(url, LIST_TOOLS, session)
            as_a = await _post(url, LIST_TOOLS, {**_bearer("a"), **session})
    assert opened.status_code == 200
    assert initialized.status_code == 202
    assert as_b.status_code == 404
    assert "Session not found" in as_b.text
    assert "speak" not in as_b.text
    assert anonymous.status_code == 401
    assert as_a.status_code == 200
    assert "speak" in as_a.text


async def test_an_unknown_token_or_none_is_refused_with_401_when_several_agents_are_served(
    tmp_path: Path,
) -> None:
    async with _endpoint(tmp_path) as (_board, _watched, url):
        with anyio.fail_after(30):
            unknown = await _post(
                url, INITIALIZE, {"Authorization": "Bearer tok-nobody-1234567890"}
            )
            missing = await _post(url, INITIALIZE, {})
    assert unknown.status_code == 401
    assert 'error="invalid_token"' in unknown.headers["www-authenticate"]
    assert "proves no agent" in unknown.json()["error_description"]
    assert missing.status_code == 401
    assert "Authorization: Bearer" in missing.json()["error_description"]
    assert "@a" not in missing.text
    assert "@b" not in missing.text


async def test_the_directory_shows_an_agent_online_while_its_client_is_attached(
    tmp_path: Path,
) -> None:
    async with _endpoint(tmp_path) as (board, watched, url):
        with anyio.fail_after(30):
            async with _client(url, TOKENS["a"]) as a:
                await a.list_tools()
                assert board.attachments.count("a") == 1
                assert board.directory.lookup("@a").online
                assert board.attachments.attached() == ["a"]
            await watched.until(lambda: board.attachments.count("a") == 0)
        entry = board.directory.lookup("@a")
        last_active = board.attachments.last_active("a")
    assert not entry.online
    assert last_active is not None


async def test_an_agent_added_at_run_time_is_served_and_one_that_ended_is_refused(
    tmp_path: Path,
) -> None:
    async with _endpoint(tmp_path) as (board, watched, url):
        board.roster.add(
            Identity(name="c", handle="@c", kind="task", token_digest=token_digest(TASK_TOKEN))
        )
        with anyio.fail_after(30):
            async with _client(url, TASK_TOKEN) as c:
                assert await _speak_description(c) == SPEAK_DESCRIPTIONS["hybrid"]
                assert board.attachments.count("c") == 1
                board.roster.remove("c")
                refused = await _post(url, INITIALIZE, {"Authorization": f"Bearer {TASK_TOKEN}"})
                # Its server is stopped, which ends its open session.
                await watched.until(lambda: board.attachments.count("c") == 0)
                assert board.attachments.attached() == []
    assert refused.status_code == 401


async def test_no_token_appears_in_tool_output_or_the_directory_export(tmp_path: Path) -> None:
    answers: list[str] = []
    async with _endpoint(tmp_path) as (board, _watched, url):
        with anyio.fail_after(30):
            async with _client(url, TOKENS["a"]) as a, _client(url, TOKENS["b"]) as b:
                for client in (a, b):
                    listed = await client.list_tools()
                    answers.append(listed.model_dump_json())
                    names = {tool.name for tool in listed.tools}
                    calls: list[tuple[str, dict[str, Any]]] = [
                        ("inbox", {}),
                        ("channel_list", {}),
                        ("speak", {"text": "hi"}),
                    ]
                    if "directory_list" in names:
                        calls.append(("directory_list", {}))
                    if "directory_lookup" in names:
                        calls.append(("directory_lookup", {"address": "@a"}))
                    for tool, arguments in calls:
                        result = await client.call_tool(tool, arguments)
                        answers.append(result.model_dump_json())
        answers.append(json.dumps(export_snapshot(board.directory, exported_at=0.0)))
    text = "\n".join(answers)
    assert "@a" in text
    for secret in SECRETS:
        assert secret not in text


async def test_switchboard_run_serves_two_agents_and_logs_their_handles(tmp_path: Path) -> None:
    path = tmp_path / "c.toml"
    path.write_text(
        f'[store]\npath = "{tmp_path / "s.sqlite"}"\n'
        '[agent]\ntransport = "http"\nport = 0\n'
        "[[agents]]\n"
        f'handle = "@a"\ntoken = "{TOKENS["a"]}"\nprose = "disabled"\n'
        'roles = ["default_delivery"]\n'
        "[[agents]]\n"
        f'handle = "@b"\ntoken_file = "{tmp_path / "b.token"}"\nprose = "locus"\n'
    )
    (tmp_path / "b.token").write_text(TOKENS["b"] + "\n")
    (tmp_path / "b.token").chmod(0o600)
    command = [sys.executable, "-m", "switchboard", "run", "--config", str(path)]
    async with await anyio.open_process(command) as process:
        assert process.stderr is not None
        seen = ""
        try:
            with anyio.fail_after(30):
                while (found := re.search(r"agent_endpoint .*\n", seen)) is None:
                    seen += (await process.stderr.receive()).decode()
                line = found.group(0)
                url = re.search(r"url=(\S+)", line)
                assert url is not None, line
                async with _client(url.group(1), TOKENS["a"]) as a:
                    seen_by_a = await _speak_description(a)
                async with _client(url.group(1), TOKENS["b"]) as b:
                    seen_by_b = await _speak_description(b)
                refused = await _post(url.group(1), INITIALIZE, {})
        finally:
            process.terminate()
            with anyio.fail_after(30):
                await process.wait()
    assert "auth=bearer" in line
    assert "'@a', '@b'" in line
    assert seen_by_a == SPEAK_DESCRIPTIONS["disabled"]
    # @b's token came from its token_file.
    assert seen_by_b == SPEAK_DESCRIPTIONS["locus"]
    assert refused.status_code == 401
    for secret in SECRETS:
        assert secret not in seen


def _stdio_config(tmp_path: Path) -> Path:
    store = tmp_path / "s.sqlite"
    with Directory.open(store) as directory:
        _listed(directory, "@a", "@b")
    path = tmp_path / "c.toml"
    path.write_text(
        f'[store]\npath = "{store}"\n'
        '[agent]\ntransport = "stdio"\n'
        "[[agents]]\n"
        'handle = "@a"\nprose = "disabled"\nroles = ["default_delivery"]\n'
        "[[agents]]\n"
        'handle = "@b"\nprose = "locus"\n'
    )
    return path


@pytest.mark.parametrize(("chosen", "prose"), [(None, "disabled"), ("@b", "locus")])
async def test_agent_picks_the_identity_of_a_stdio_session_defaulting_to_default_delivery(
    tmp_path: Path, chosen: str | None, prose: str
) -> None:
    path = _stdio_config(tmp_path)
    picked = [] if chosen is None else ["--agent", chosen]
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "switchboard", "run", "--config", str(path), *picked],
    )
    handle = chosen or "@a"
    with anyio.fail_after(60):
        async with Client(params, mode="legacy") as client:
            description = await _speak_description(client)
            with Directory.open(tmp_path / "s.sqlite") as directory:
                online_while_attached = directory.lookup(handle).online
    assert description == SPEAK_DESCRIPTIONS[prose]
    assert online_while_attached
    # The session ended with the process: the agent is offline again.
    with Directory.open(tmp_path / "s.sqlite") as directory:
        assert not directory.lookup(handle).online


async def test_an_unknown_agent_for_a_stdio_session_exits_2_listing_the_agents(
    tmp_path: Path,
) -> None:
    path = _stdio_config(tmp_path)
    command = [sys.executable, "-m", "switchboard", "run", "--config", str(path)]
    with anyio.fail_after(60):
        done = await anyio.run_process([*command, "--agent", "@zed"], check=False)
    assert done.returncode == 2
    err = done.stderr.decode()
    assert "--agent @zed" in err
    assert "@a, @b" in err


class _Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_attachments_count_sessions_and_mark_the_entry_after_the_first_and_last(
    tmp_path: Path,
) -> None:
    clock = _Clock()
    roster = Config(agents=_agents()).roster()
    with Directory.open(tmp_path / "d.sqlite", clock=clock) as directory:
        _listed(directory, "@a")
        told: list[str] = []
        attachments = Attachments(_roster(roster), directory, clock=clock)
        attachments.watch(told.append)
        attachments.attach("a")
        attachments.attach("@a")
        attachments.detach("a")
        still_online = directory.lookup("@a").online
        clock.now += 1
        attachments.detach("a")
        entry = directory.lookup("@a")
        attachments.attach("b")  # listed nowhere: counted, nothing written, nothing raised
    assert told == ["a", "a", "b"]
    assert still_online
    assert not entry.online
    assert entry.last_seen == 1001.0
    assert attachments.count("a") == 0
    assert attachments.attached() == ["b"]
    assert attachments.last_active("a") == 1001.0
    assert attachments.last_active("nobody") is None


def test_a_touch_writes_last_seen_at_most_once_per_interval(tmp_path: Path) -> None:
    clock = _Clock()
    with Directory.open(tmp_path / "d.sqlite", clock=clock) as directory:
        _listed(directory, "@a")
        attachments = Attachments(
            _roster(Config(agents=_agents()).roster()), directory, clock=clock
        )
        seen = []
        for _ in range(3):
            clock.now += 1.0
            attachments.touch("a")
            seen.append(directory.lookup("@a").last_seen)
        clock.now += 5.0
        attachments.touch("a")
        seen.append(directory.lookup("@a").last_seen)
        active = attachments.last_active("a")
    assert seen == [1001.0, 1001.0, 1001.0, 1008.0]
    assert active == 1008.0


def _roster(entries: tuple[AgentEntry, ...]) -> Roster:
    return Roster.from_entries(entries)
