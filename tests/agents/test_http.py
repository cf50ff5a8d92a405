"""The agent's streamable HTTP endpoint: a bearer token, Host/Origin checks on every bind, and
refusing an unsafe bind before anything listens (issue #11, item 5; the URL printed at start,
item 7).

Every request goes over real loopback HTTP to the server ``serve()`` builds, the code path of
``switchboard run``; one test runs ``switchboard run`` itself and reads its start-up line.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from pydantic import SecretStr

from switchboard.agents.http import MCP_PATH, bind_endpoint, plan_endpoint, serve_endpoint
from switchboard.app import build_server
from switchboard.app.board import Switchboard
from switchboard.config import AgentConfig, Config, ConfigError, load_config
from tests.helpers import serving, suite_store_config

pytestmark = pytest.mark.anyio

TOKEN = "tok-" + "a1b2c3d4e5f6g7h8i9j0"
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
MCP_HEADERS = {"Accept": "application/json, text/event-stream"}


def _config(tmp_path: Path, **agent: Any) -> Config:
    fields: dict[str, Any] = {"transport": "http", "port": 0, **agent}
    return Config(store=suite_store_config(tmp_path), agent=AgentConfig(**fields))


async def _initialize(url: str, headers: Mapping[str, str]) -> httpx2.Response:
    async with httpx2.AsyncClient(timeout=30) as http:
        return await http.post(url, json=dict(INITIALIZE), headers={**MCP_HEADERS, **headers})


async def test_a_request_without_a_token_is_refused_with_401_and_a_bearer_challenge(
    tmp_path: Path,
) -> None:
    async with serving(_config(tmp_path, token=TOKEN)) as url:
        with anyio.fail_after(30):
            answer = await _initialize(url, {})
    assert answer.status_code == 401
    assert answer.headers["www-authenticate"].startswith("Bearer ")
    assert "Authorization: Bearer" in answer.json()["error_description"]


async def test_a_request_with_a_wrong_token_is_refused_with_401_and_invalid_token(
    tmp_path: Path,
) -> None:
    async with serving(_config(tmp_path, token=TOKEN)) as url:
        with anyio.fail_after(30):
            wrong = await _initialize(url, {"Authorization": f"Bearer {TOKEN}x"})
            not_bearer = await _initialize(url, {"Authorization": f"Basic {TOKEN}"})
    for answer in (wrong, not_bearer):
        assert answer.status_code == 401
        assert answer.headers["www-authenticate"].startswith("Bearer ")
        assert 'error="invalid_token"' in answer.headers["www-authenticate"]
    said = wrong.json()["error_description"]
    assert "the bearer token is not the token of agent @" in said
    assert "''s" not in said


async def test_the_right_token_lets_an_mcp_client_list_the_tools(tmp_path: Path) -> None:
    async with serving(_config(tmp_path, token=TOKEN)) as url:
        assert url.endswith(MCP_PATH)
        with anyio.fail_after(30):
            async with (
                httpx2.AsyncClient(headers={"Authorization": f"Bearer {TOKEN}"}) as http,
                Client(streamable_http_client(url, http_client=http), mode="legacy") as client,
            ):
                listed = await client.list_tools()
    assert "inbox" in {tool.name for tool in listed.tools}


@pytest.mark.parametrize("bind", ["127.0.0.1", "127.0.0.2"])
async def test_a_forged_host_is_refused_on_every_loopback_bind(tmp_path: Path, bind: str) -> None:
    async with serving(_config(tmp_path, host=bind, token=TOKEN)) as url:
        port = url.rsplit(":", 1)[1].split("/")[0]
        auth = {"Authorization": f"Bearer {TOKEN}"}
        with anyio.fail_after(30):
            forged = await _initialize(url, {**auth, "Host": f"evil.example:{port}"})
            forged_no_token = await _initialize(url, {"Host": f"evil.example:{port}"})
            genuine = await _initialize(url, auth)
    assert forged.status_code == 421
    assert "allowed_hosts" in forged.text
    assert forged_no_token.status_code == 421
    assert genuine.status_code == 200


@pytest.mark.parametrize("bind", ["127.0.0.1", "127.0.0.2"])
async def test_a_forged_origin_is_refused_on_every_loopback_bind(tmp_path: Path, bind: str) -> None:
    async with serving(_config(tmp_path, host=bind, token=TOKEN)) as url:
        port = url.rsplit(":", 1)[1].split("/")[0]
        auth = {"Authorization": f"Bearer {TOKEN}"}
        with anyio.fail_after(30):
            forged = await _initialize(url, {**auth, "Origin": "http://evil.example"})
            own = await _initialize(url, {**auth, "Origin": f"http://{bind}:{port}"})
    assert forged.status_code == 403
    assert "allowed_origins" in forged.text
    assert own.status_code == 200


async def test_allowed_hosts_and_origins_replace_the_defaults(tmp_path: Path) -> None:
    config = _config(
        tmp_path,
        token=TOKEN,
        allowed_hosts=["switchboard.test:*"],
        allowed_origins=["https://app.test"],
    )
    async with serving(config) as url:
        port = url.rsplit(":", 1)[1].split("/")[0]
        auth = {"Authorization": f"Bearer {TOKEN}"}
        with anyio.fail_after(30):
            named = await _initialize(url, {**auth, "Host": f"switchboard.test:{port}"})
            by_address = await _initialize(url, auth)
            app = await _initialize(
                url, {**auth, "Host": f"switchboard.test:{port}", "Origin": "https://app.test"}
            )
    assert named.status_code == 200
    assert by_address.status_code == 421
    assert app.status_code == 200


async def test_without_a_token_a_loopback_endpoint_serves_and_warns(
    tmp_path: Path, logs: list[dict[str, Any]]
) -> None:
    async with serving(_config(tmp_path)) as url:
        with anyio.fail_after(30):
            answer = await _initialize(url, {})
    assert answer.status_code == 200
    (start,) = [e for e in logs if e["event"] == "agent_endpoint"]
    assert start["url"] == url
    assert start["auth"] == "none"
    assert any(e["event"] == "agent_endpoint_unauthenticated" for e in logs)


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "192.0.2.7", "switchboard.example"])
def test_a_bind_beyond_loopback_without_a_token_is_refused_naming_the_settings(
    tmp_path: Path, host: str
) -> None:
    path = tmp_path / "c.toml"
    path.write_text(
        f'[agent]\ntransport = "http"\nhost = "{host}"\nallowed_hosts = ["x.example"]\n'
    )
    with pytest.raises(ConfigError) as caught:
        load_config(path)
    text = str(caught.value)
    assert f"`host` = {host!r} is not a loopback address" in text
    assert "`token" in text
    assert "token_file" in text


def test_a_wildcard_bind_needs_allowed_hosts(tmp_path: Path) -> None:
    path = tmp_path / "c.toml"
    path.write_text(f'[agent]\ntransport = "http"\nhost = "0.0.0.0"\ntoken = "{TOKEN}"\n')
    with pytest.raises(ConfigError, match="set `allowed_hosts`"):
        load_config(path)


def test_switchboard_run_refuses_an_open_non_loopback_bind_before_listening(
    tmp_path: Path,
) -> None:
    import subprocess

    path = tmp_path / "c.toml"
    path.write_text('[agent]\ntransport = "http"\nhost = "0.0.0.0"\nport = 0\n')
    done = subprocess.run(
        [sys.executable, "-m", "switchboard", "run", "--config", str(path)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2
    assert "is not a loopback address" in done.stderr
    assert "agent_endpoint" not in done.stderr


@pytest.mark.parametrize(
    ("token", "why"),
    [("short", "shorter than 16"), ("has a space in it ok", "space"), ("", "empty")],
)
def test_an_unusable_token_is_refused_at_load(tmp_path: Path, token: str, why: str) -> None:
    path = tmp_path / "c.toml"
    path.write_text(f'[agent]\ntransport = "http"\ntoken = "{token}"\n')
    with pytest.raises(ConfigError, match=why) as caught:
        load_config(path)
    assert "secrets.token_urlsafe" in str(caught.value)


def test_token_and_token_file_together_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="at most one of `token` or `token_file`"):
        AgentConfig(transport="http", token=SecretStr(TOKEN), token_file="t")


def test_a_token_file_is_read_stripped(tmp_path: Path) -> None:
    file = tmp_path / "token"
    file.write_text(f"  {TOKEN}\n")
    file.chmod(0o600)
    plan = plan_endpoint(AgentConfig(transport="http", token_file=str(file)))
    assert plan.tokens == {"agent": TOKEN}
    assert plan.auth == "bearer"
    assert TOKEN not in repr(plan)


@pytest.mark.parametrize(
    ("content", "mode", "why"),
    [
        (TOKEN, 0o644, "chmod 600"),
        (TOKEN, 0o620, "chmod 600"),
        ("\n  \n", 0o600, "empty"),
        ("short\n", 0o600, "shorter than 16"),
    ],
)
def test_an_unsafe_or_unusable_token_file_is_refused(
    tmp_path: Path, content: str, mode: int, why: str
) -> None:
    file = tmp_path / "token"
    file.write_text(content)
    file.chmod(mode)
    with pytest.raises(ConfigError, match=why) as caught:
        plan_endpoint(AgentConfig(transport="http", token_file=str(file)))
    assert "token_file" in str(caught.value)


def test_a_missing_token_file_is_refused_with_its_name(tmp_path: Path) -> None:
    missing = tmp_path / "nope"
    with pytest.raises(ConfigError, match="does not exist") as caught:
        plan_endpoint(AgentConfig(transport="http", token_file=str(missing)))
    assert str(missing) in str(caught.value)


def test_a_port_in_use_is_refused_naming_the_setting(tmp_path: Path) -> None:
    plan = plan_endpoint(AgentConfig(transport="http", port=0))
    first = bind_endpoint(plan)
    try:
        taken = plan_endpoint(AgentConfig(transport="http", port=first.getsockname()[1]))
        with pytest.raises(ConfigError, match=r"\[agent\] host = '127.0.0.1', port = \d+"):
            bind_endpoint(taken)
    finally:
        first.close()


async def test_switchboard_run_prints_the_url_and_auth_mode_and_serves_there(
    tmp_path: Path,
) -> None:
    path = tmp_path / "c.toml"
    path.write_text(
        f'[store]\npath = "{tmp_path / "s.sqlite"}"\n'
        '[agent]\ntransport = "http"\nport = 0\ntoken = "${SWITCHBOARD_AGENT_TOKEN}"\n'
    )
    env = {**os.environ, "SWITCHBOARD_AGENT_TOKEN": TOKEN}
    command = [sys.executable, "-m", "switchboard", "run", "--config", str(path)]
    async with await anyio.open_process(command, env=env) as process:
        assert process.stderr is not None
        seen = ""
        try:
            with anyio.fail_after(30):
                while (found := re.search(r"agent_endpoint .*\n", seen)) is None:
                    seen += (await process.stderr.receive()).decode()
                line = found.group(0)
                url = re.search(r"url=(\S+)", line)
                assert url is not None, line
                assert "auth=bearer" in line
                assert re.fullmatch(r"http://127\.0\.0\.1:\d+/mcp", url.group(1))
                assert (await _initialize(url.group(1), {})).status_code == 401
                authorized = {"Authorization": f"Bearer {TOKEN}"}
                assert (await _initialize(url.group(1), authorized)).status_code == 200
        finally:
            process.terminate()
            with anyio.fail_after(30):
                await process.wait()
    assert TOKEN not in seen


async def test_a_stopping_endpoint_refuses_new_requests_answers_the_open_ones_and_then_stops(
    tmp_path: Path,
) -> None:
    """Told to stop, the endpoint refuses a new request with 503 while a long poll is still in
    flight; the poll, ended by the stopping host, is answered (empty), and then the endpoint
    ends its sessions and stops, by itself."""
    config = _config(tmp_path, token=TOKEN)
    plan = plan_endpoint(config.agent)
    sock = bind_endpoint(plan)
    url = plan.url(sock.getsockname()[1])
    stop = anyio.Event()
    polled: list[dict[str, Any]] = []
    served = anyio.Event()
    with anyio.fail_after(60):
        async with Switchboard.started(config) as board, anyio.create_task_group() as group:

            async def endpoint() -> None:
                server = build_server(board, agent=config.agent.name)
                await serve_endpoint(server, plan, sock, stop=stop, stop_grace=60)
                served.set()

            async def poll(client: Client) -> None:
                result = await client.call_tool("inbox", {"wait_seconds": 60})
                polled.append({"is_error": result.is_error, **(result.structured_content or {})})

            group.start_soon(endpoint)
            async with (
                httpx2.AsyncClient(timeout=30, headers={"Authorization": f"Bearer {TOKEN}"}) as h,
                Client(streamable_http_client(url, http_client=h), mode="legacy") as client,
            ):
                await client.list_tools()
                async with anyio.create_task_group() as polls:
                    polls.start_soon(poll, client)
                    while not board.store.waiting:
                        await anyio.lowlevel.checkpoint()
                    stop.set()  # the endpoint waits for the poll, which the host has not ended
                    refused = await _initialize(url, {"Authorization": f"Bearer {TOKEN}"})
                    board.begin_stopping()  # the host ends its long polls: the poll answers
            await served.wait()
    assert refused.status_code == 503
    assert refused.json()["error"] == "shutting_down"
    assert polled == [{**polled[0], "is_error": False, "messages": []}]
