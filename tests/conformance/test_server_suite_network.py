"""The kit dials network targets too: Demo Town served in-process over TCP and WebSocket."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Final

import anyio
import pytest
from anyio.abc import SocketAttribute, SocketStream
from websockets.asyncio.server import ServerConnection, serve

from switchboard.conformance.common.outcomes import Outcome
from switchboard.conformance.server_suite import SuiteOptions, run_server_suite
from switchboard.connectors.demo import DemoConnector, DemoOptions
from switchboard.transport import tcp_link_from_stream, websocket_link_from_connection

pytestmark = pytest.mark.anyio

CHECKS: Final = [
    "server.handshake.advertisement_shape",
    "server.channels.publish_delivers",
    "server.requests.survives_malformed_input",
]
OPTIONS: Final = SuiteOptions(silence=0.5, policy_silence=0.5)


def _town() -> DemoConnector:
    return DemoConnector(DemoOptions(interval=0, hello=True))


@asynccontextmanager
async def tcp_town() -> AsyncIterator[str]:
    """Serve a fresh Demo Town on every TCP connection; yield ``tcp://host:port``."""
    listener = await anyio.create_tcp_listener(local_host="127.0.0.1", local_port=0)

    async def handle(stream: SocketStream) -> None:
        await _town().serve(tcp_link_from_stream(stream))

    port = listener.extra(SocketAttribute.local_port)
    async with anyio.create_task_group() as tg:
        tg.start_soon(listener.serve, handle)
        try:
            yield f"tcp://127.0.0.1:{port}"
        finally:
            tg.cancel_scope.cancel()


@asynccontextmanager
async def ws_town() -> AsyncIterator[str]:
    """Serve a fresh Demo Town on every WebSocket connection; yield its ``ws://`` URL."""

    async def handle(connection: ServerConnection) -> None:
        await _town().serve(websocket_link_from_connection(connection))

    async with serve(handle, "127.0.0.1", 0) as server:
        port = next(iter(server.sockets)).getsockname()[1]
        yield f"ws://127.0.0.1:{port}/mcpl"


@pytest.mark.parametrize("town", [tcp_town, ws_town], ids=["tcp", "ws"])
async def test_the_suite_runs_over_a_network_url_one_check_at_a_time(
    town: Callable[[], AbstractAsyncContextManager[str]],
) -> None:
    with anyio.fail_after(60):
        async with town() as url:
            report = await run_server_suite(url, only=CHECKS, options=OPTIONS)
    assert report.target == url
    assert {r.check_id: r.outcome for r in report.results} == dict.fromkeys(CHECKS, Outcome.PASS)
