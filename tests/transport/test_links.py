"""The same peer behaviour over every real link: memory, TCP on 127.0.0.1, WebSocket.

Each factory yields two connected links; one test body runs over all of them.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, MutableMapping
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any

import anyio
import orjson
import pytest
from anyio.abc import SocketAttribute, SocketListener
from websockets.asyncio.server import ServerConnection, serve

from switchboard.transport import (
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    BatchLink,
    Link,
    LinkClosedError,
    Peer,
    RpcError,
    dial_tcp,
    dial_websocket,
    memory_link_pair,
    method_not_found,
    tcp_link_from_stream,
    websocket_link_from_connection,
)

pytestmark = pytest.mark.anyio

Logs = list[MutableMapping[str, Any]]
PairFactory = Callable[[int], AbstractAsyncContextManager[tuple[Link, Link]]]


@asynccontextmanager
async def memory_pair(max_frame: int) -> AsyncIterator[tuple[Link, Link]]:
    a, b = memory_link_pair(max_frame)
    yield a, b
    await a.aclose()
    await b.aclose()


@asynccontextmanager
async def tcp_pair(max_frame: int) -> AsyncIterator[tuple[Link, Link]]:
    listener = await anyio.create_tcp_listener(local_host="127.0.0.1", local_port=0)
    async with listener:
        port = listener.extra(SocketAttribute.local_port)
        async with dial_tcp("127.0.0.1", port, max_frame=max_frame) as a:
            (inner,) = listener.listeners
            assert isinstance(inner, SocketListener)
            accepted = await inner.accept()
            b = tcp_link_from_stream(accepted, max_frame=max_frame)
            assert b.description.startswith("tcp:127.0.0.1:")
            yield a, b
            await b.aclose()


@asynccontextmanager
async def ws_pair(max_frame: int) -> AsyncIterator[tuple[Link, Link]]:
    accepted: list[Link] = []
    arrived = anyio.Event()
    finished = anyio.Event()

    async def handler(connection: ServerConnection) -> None:
        accepted.append(websocket_link_from_connection(connection))
        arrived.set()
        await finished.wait()

    async with serve(handler, "127.0.0.1", 0, max_size=max_frame) as server:
        port = next(iter(server.sockets)).getsockname()[1]
        async with dial_websocket(f"ws://127.0.0.1:{port}/mcpl", max_frame=max_frame) as a:
            with anyio.fail_after(5):
                await arrived.wait()
            try:
                yield a, accepted[0]
            finally:
                finished.set()
                await accepted[0].aclose()


ALL = pytest.mark.parametrize("pair", [memory_pair, tcp_pair, ws_pair], ids=["memory", "tcp", "ws"])
NDJSON = pytest.mark.parametrize("pair", [memory_pair, tcp_pair], ids=["memory", "tcp"])


async def handler(method: str, params: Any) -> Any:
    if method == "echo":
        return params
    raise method_not_found(method)


@ALL
async def test_requests_and_notifications_round_trip(pair: PairFactory) -> None:
    notes: list[Any] = []
    got_note = anyio.Event()

    async def on_note(method: str, params: Any) -> None:
        notes.append((method, params))
        got_note.set()

    with anyio.fail_after(5):
        async with pair(1 << 20) as (a_link, b_link), anyio.create_task_group() as tg:
            a = Peer(a_link, on_notification=on_note, name="a")
            b = Peer(b_link, on_request=handler, name="b")
            tg.start_soon(a.run)
            tg.start_soon(b.run)
            payload = {"text": "héllo ✓", "n": [1, 2.5, None, True]}
            assert await a.request("echo", payload) == payload
            with pytest.raises(RpcError) as caught:
                await a.request("missing")
            assert caught.value.code == METHOD_NOT_FOUND
            await b.notify("note", {"k": "v"})
            await got_note.wait()
            await a.aclose()
            await b.aclose()
    assert notes == [("note", {"k": "v"})]


@ALL
async def test_a_handler_can_ask_back_before_answering(pair: PairFactory) -> None:
    peers: dict[str, Peer] = {}

    async def b_handler(method: str, params: Any) -> Any:
        return {"inner": await peers["b"].request("echo", ["asked back"])}

    with anyio.fail_after(5):
        async with pair(1 << 20) as (a_link, b_link), anyio.create_task_group() as tg:
            peers["a"] = Peer(a_link, on_request=handler)
            peers["b"] = Peer(b_link, on_request=b_handler)
            tg.start_soon(peers["a"].run)
            tg.start_soon(peers["b"].run)
            assert await peers["a"].request("outer") == {"inner": ["asked back"]}
            await peers["a"].aclose()
            await peers["b"].aclose()


@ALL
async def test_a_raw_batch_gets_one_array_answer(pair: PairFactory) -> None:
    batch = orjson.dumps(
        [
            {"jsonrpc": "2.0", "id": "s", "method": "echo", "params": ["x"]},
            {"jsonrpc": "2.0", "method": "note"},
            {"jsonrpc": "2.0", "id": 2, "method": "echo", "params": {"y": 1}},
        ]
    )
    with anyio.fail_after(5):
        async with pair(1 << 20) as (raw, b_link), anyio.create_task_group() as tg:
            b = Peer(b_link, on_request=handler)
            tg.start_soon(b.run)
            await raw.send(batch)
            answer = orjson.loads(await raw.receive())
            await b.aclose()
    assert answer == [
        {"jsonrpc": "2.0", "id": "s", "result": ["x"]},
        {"jsonrpc": "2.0", "id": 2, "result": {"y": 1}},
    ]


@ALL
async def test_the_remote_end_closing_fails_outstanding_requests(pair: PairFactory) -> None:
    errors: list[Exception] = []
    with anyio.fail_after(5):
        async with pair(1 << 20) as (a_link, raw), anyio.create_task_group() as tg:
            a = Peer(a_link)
            tg.start_soon(a.run)

            async def ask() -> None:
                try:
                    await a.request("x")
                except LinkClosedError as exc:
                    errors.append(exc)

            async with anyio.create_task_group() as asking:
                asking.start_soon(ask)
                assert orjson.loads(await raw.receive())["method"] == "x"
                await raw.aclose()
    assert len(errors) == 1
    assert "may or may not" in str(errors[0])


@NDJSON
async def test_an_oversized_frame_is_refused_and_the_link_survives(
    pair: PairFactory, logs: Logs
) -> None:
    with anyio.fail_after(5):
        async with pair(200) as (raw, b_link), anyio.create_task_group() as tg:
            b = Peer(b_link, on_request=handler)
            tg.start_soon(b.run)
            await raw.send(
                b'{"jsonrpc":"2.0","id":1,"method":"echo","params":["' + b"x" * 500 + b'"]}'
            )
            refused = orjson.loads(await raw.receive())
            await raw.send(b'{"jsonrpc":"2.0","id":2,"method":"echo","params":["ok"]}')
            answer = orjson.loads(await raw.receive())
            await b.aclose()
    assert refused["error"] == {
        "code": INVALID_REQUEST,
        "message": "Invalid Request: frame exceeds 200 bytes",
    }
    assert answer["result"] == ["ok"]


async def test_an_oversized_websocket_message_ends_the_link() -> None:
    with anyio.fail_after(5):
        async with ws_pair(200) as (raw, b_link):
            await raw.send(b"[" + b'"x",' * 100 + b'"x"]')
            with pytest.raises(LinkClosedError, match="1009"):
                await b_link.receive()


async def test_send_many_writes_frames_that_arrive_one_by_one_over_tcp() -> None:
    with anyio.fail_after(5):
        async with tcp_pair(1 << 20) as (a, b):
            assert isinstance(a, BatchLink)
            await a.send_many([b"{}", b"[1]", b'"x"'])
            assert [await b.receive() for _ in range(3)] == [b"{}", b"[1]", b'"x"']


async def test_dialling_a_closed_port_raises_link_closed_error() -> None:
    listener = await anyio.create_tcp_listener(local_host="127.0.0.1", local_port=0)
    port = listener.extra(SocketAttribute.local_port)
    await listener.aclose()
    with pytest.raises(LinkClosedError, match="could not connect"):
        async with dial_tcp("127.0.0.1", port):
            pass
    with pytest.raises(LinkClosedError, match="could not connect"):
        async with dial_websocket(f"ws://127.0.0.1:{port}/"):
            pass


async def test_requests_received_before_a_half_close_are_still_answered() -> None:
    async def slow_echo(method: str, params: Any) -> Any:
        await anyio.lowlevel.checkpoint()
        return params

    listener = await anyio.create_tcp_listener(local_host="127.0.0.1", local_port=0)
    async with listener:
        port = listener.extra(SocketAttribute.local_port)
        (inner,) = listener.listeners
        assert isinstance(inner, SocketListener)
        with anyio.fail_after(5):
            client = await anyio.connect_tcp("127.0.0.1", port)
            peer = Peer(tcp_link_from_stream(await inner.accept()), on_request=slow_echo)
            async with client, anyio.create_task_group() as tg:
                tg.start_soon(peer.run)
                await client.send(
                    b"".join(
                        orjson.dumps({"jsonrpc": "2.0", "id": n, "method": "m", "params": [n]})
                        + b"\n"
                        for n in range(20)
                    )
                )
                await client.send_eof()
                received = b""
                async for chunk in client:
                    received += chunk
    answers = [orjson.loads(line) for line in received.splitlines()]
    assert answers == [{"jsonrpc": "2.0", "id": n, "result": [n]} for n in range(20)]
    assert peer.closed
