"""Real subprocesses over stdio: spawn_stdio on the host side, stdio_server_link in the child."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import AsyncIterator, MutableMapping
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import orjson
import pytest

from switchboard.transport import (
    INTERNAL_ERROR,
    INVALID_REQUEST,
    Peer,
    RpcError,
    StdioLink,
    spawn_stdio,
)

pytestmark = pytest.mark.anyio

Logs = list[MutableMapping[str, Any]]

ECHO_PEER = str(Path(__file__).with_name("echo_peer.py"))


def events(logs: Logs, name: str) -> list[MutableMapping[str, Any]]:
    return [entry for entry in logs if entry["event"] == name]


@asynccontextmanager
async def echo_child(max_frame: int = 1 << 20) -> AsyncIterator[tuple[StdioLink, Peer]]:
    async def host_handler(method: str, params: Any) -> Any:
        return {"host saw": method, "params": params}

    async with spawn_stdio([sys.executable, ECHO_PEER, str(max_frame)], name="echo") as link:
        peer = Peer(link, on_request=host_handler, name="host", default_timeout=10)
        async with anyio.create_task_group() as tg:
            tg.start_soon(peer.run)
            yield link, peer
            await peer.aclose()


async def test_a_spawned_peer_answers_over_stdio_after_its_junk_line_is_skipped(
    logs: Logs,
) -> None:
    with anyio.fail_after(10):
        async with echo_child() as (link, peer):
            assert await peer.request("echo", {"text": "hello"}) == {"text": "hello"}
            assert await peer.request("pid") == link.pid
            assert link.returncode is None
    (junk,) = events(logs, "junk_line_skipped")
    assert junk["detail"] == "Logged in as echo-bot#0001"
    assert link.returncode == 0


async def test_errors_from_the_child_arrive_as_rpc_errors_without_internals() -> None:
    with anyio.fail_after(10):
        async with echo_child() as (_, peer):
            with pytest.raises(RpcError) as failed:
                await peer.request("fail", ["x"])
            with pytest.raises(RpcError) as boom:
                await peer.request("boom")
    assert (failed.value.code, failed.value.data) == (-32001, {"params": ["x"]})
    assert (boom.value.code, boom.value.message, boom.value.data) == (
        INTERNAL_ERROR,
        "Internal error",
        None,
    )


async def test_the_child_can_ask_the_host_while_answering_a_request() -> None:
    with anyio.fail_after(10):
        async with echo_child() as (_, peer):
            answer = await peer.request("ask_back", {"method": "channels/list", "params": {}})
    assert answer == {"host saw": "channels/list", "params": {}}


async def test_the_childs_stderr_lines_are_logged(logs: Logs) -> None:
    with anyio.fail_after(10):
        async with echo_child() as (link, peer):
            assert await peer.request("stderr", {"line": "warming up the flux"}) is True
    lines = [entry for entry in events(logs, "connector_stderr") if entry["name"] == "echo"]
    assert "warming up the flux" in [entry["line"] for entry in lines]
    assert all(entry["pid"] == link.pid for entry in lines)


async def test_an_oversized_frame_sent_to_the_child_is_refused_and_the_link_survives() -> None:
    big = orjson.dumps({"jsonrpc": "2.0", "id": 1, "method": "echo", "params": ["x" * 5000]})
    small = orjson.dumps({"jsonrpc": "2.0", "id": 2, "method": "echo", "params": ["ok"]})
    with anyio.fail_after(10):
        async with spawn_stdio([sys.executable, ECHO_PEER, "1000"]) as link:
            assert await link.receive() == b"Logged in as echo-bot#0001"
            await link.send_many([big, small])
            refused = orjson.loads(await link.receive())
            answer = orjson.loads(await link.receive())
    assert refused["id"] is None
    assert refused["error"] == {
        "code": INVALID_REQUEST,
        "message": "Invalid Request: frame exceeds 1000 bytes",
    }
    assert answer == {"jsonrpc": "2.0", "id": 2, "result": ["ok"]}


async def test_the_environment_is_merged_over_the_parents() -> None:
    script = (
        "import json, os; "
        "print(json.dumps([os.environ.get('SB_TEST_VAR'), 'PATH' in os.environ]), flush=True)"
    )
    with anyio.fail_after(10):
        async with spawn_stdio(
            [sys.executable, "-c", script], env={"SB_TEST_VAR": "on"}, cwd="/"
        ) as link:
            assert orjson.loads(await link.receive()) == ["on", True]


async def test_leaving_the_context_stops_a_child_that_ignores_eof_and_sigterm() -> None:
    script = (
        "import signal, sys, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
        "print('{}', flush=True); time.sleep(60)"
    )
    with anyio.fail_after(10):
        async with spawn_stdio([sys.executable, "-c", script], shutdown_grace=0.2) as link:
            await link.receive()  # the child is up and has ignored SIGTERM from now on
    assert link.returncode is not None
    assert link.returncode != 0


async def test_an_exception_in_the_body_reaches_the_caller_unwrapped() -> None:
    with anyio.fail_after(10), pytest.raises(LookupError, match="mine"):
        async with spawn_stdio([sys.executable, ECHO_PEER]):
            raise LookupError("mine")


async def test_a_cancelled_body_still_stops_the_child() -> None:
    with anyio.fail_after(10):
        with anyio.CancelScope() as scope:
            async with spawn_stdio([sys.executable, ECHO_PEER]) as link:
                await link.receive()  # the junk line: the child is up
                scope.cancel()
                await anyio.sleep_forever()
    assert link.returncode == 0


def test_a_child_whose_stdin_and_stdout_are_files_answers_everything_it_read(
    tmp_path: Path,
) -> None:
    """Files cannot be polled: the threaded fallback serves them, and EOF drains the inbox."""
    requests = tmp_path / "requests.ndjson"
    answers = tmp_path / "answers.ndjson"
    requests.write_bytes(
        b"".join(
            orjson.dumps({"jsonrpc": "2.0", "id": n, "method": "echo", "params": [n]}) + b"\n"
            for n in range(5)
        )
    )
    with requests.open("rb") as stdin, answers.open("wb") as stdout:
        subprocess.run(
            [sys.executable, ECHO_PEER], stdin=stdin, stdout=stdout, check=True, timeout=10
        )
    lines = answers.read_bytes().splitlines()
    assert lines[0] == b"Logged in as echo-bot#0001"
    assert [orjson.loads(line) for line in lines[1:]] == [
        {"jsonrpc": "2.0", "id": n, "result": [n]} for n in range(5)
    ]
