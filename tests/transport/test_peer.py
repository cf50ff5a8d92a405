"""Peer semantics over an in-memory link: ids, batches, errors, ordering, pipelining, closing.

Most tests put a Peer on one end and drive the other end by hand with raw frames, so what is
checked is exactly what goes over the wire.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, MutableMapping
from contextlib import asynccontextmanager
from typing import Any

import anyio
import orjson
import pydantic
import pytest

from switchboard.transport import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    PARSE_ERROR,
    Deferred,
    Link,
    LinkClosedError,
    MemoryLink,
    Peer,
    RequestHandler,
    RequestTimeoutError,
    RpcError,
    memory_link_pair,
    method_not_found,
)

pytestmark = pytest.mark.anyio

Logs = list[MutableMapping[str, Any]]


async def echo(method: str, params: Any) -> Any:
    if method == "echo":
        return params
    raise method_not_found(method)


@asynccontextmanager
async def serving(*peers: Peer) -> AsyncIterator[None]:
    async with anyio.create_task_group() as tg:
        for peer in peers:
            tg.start_soon(peer.run)
        yield
        for peer in peers:
            await peer.aclose()


@asynccontextmanager
async def raw_to_peer(
    on_request: RequestHandler | None = echo, max_frame: int = 1 << 20, **kwargs: Any
) -> AsyncIterator[tuple[MemoryLink, Peer]]:
    """A peer on one end of a memory pair; the test holds the other, raw end."""
    raw, other = memory_link_pair(max_frame)
    peer = Peer(other, on_request=on_request, name="under-test", **kwargs)
    async with serving(peer):
        yield raw, peer


async def exchange(raw: Link, frame: bytes) -> Any:
    await raw.send(frame)
    with anyio.fail_after(5):
        return orjson.loads(await raw.receive())


def req(request_id: object, method: str = "echo", params: Any = None) -> bytes:
    msg: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
    if params is not None:
        msg["params"] = params
    return orjson.dumps(msg)


def events(logs: Logs, name: str) -> list[MutableMapping[str, Any]]:
    return [entry for entry in logs if entry["event"] == name]


# -- ids ------------------------------------------------------------------------------------


@pytest.mark.parametrize("request_id", ["abc", "1", 1, 0, -5, 2**40])
async def test_a_request_gets_its_id_back_unchanged(request_id: object) -> None:
    async with raw_to_peer() as (raw, _):
        answer = await exchange(raw, req(request_id, params=[request_id]))
    assert answer == {"jsonrpc": "2.0", "id": request_id, "result": [request_id]}
    assert type(answer["id"]) is type(request_id)


async def test_an_integer_id_and_the_same_digits_as_a_string_are_different_requests() -> None:
    async with raw_to_peer() as (raw, _):
        first = await exchange(raw, req(1, params={"n": "int"}))
        second = await exchange(raw, req("1", params={"n": "str"}))
    assert (first["id"], first["result"]) == (1, {"n": "int"})
    assert (second["id"], second["result"]) == ("1", {"n": "str"})


async def test_a_response_is_matched_on_the_exact_id_value(logs: Logs) -> None:
    async with raw_to_peer() as (raw, peer), anyio.create_task_group() as tg:
        results: list[Any] = []

        async def ask() -> None:
            results.append(await peer.request("ping", {"x": 1}))

        tg.start_soon(ask)
        with anyio.fail_after(5):
            sent = orjson.loads(await raw.receive())
        assert type(sent["id"]) is int
        await raw.send(orjson.dumps({"jsonrpc": "2.0", "id": str(sent["id"]), "result": "str"}))
        await raw.send(orjson.dumps({"jsonrpc": "2.0", "id": True, "result": "bool"}))
        await raw.send(orjson.dumps({"jsonrpc": "2.0", "id": sent["id"], "result": "int"}))
    assert results == ["int"]
    assert len(events(logs, "late_response_dropped")) == 2


# -- batches --------------------------------------------------------------------------------


async def test_a_mixed_batch_is_answered_with_one_array_without_entries_for_notifications() -> None:
    seen: list[str] = []

    async def on_note(method: str, params: Any) -> None:
        seen.append(method)

    raw, other = memory_link_pair()
    peer = Peer(other, on_request=echo, on_notification=on_note)
    async with serving(peer):
        batch = b"[%s,%s,%s,5]" % (
            req(1, params=["a"]),
            orjson.dumps({"jsonrpc": "2.0", "method": "note"}),
            req("two", method="missing"),
        )
        answer = await exchange(raw, batch)
    assert isinstance(answer, list)
    assert answer[0] == {"jsonrpc": "2.0", "id": 1, "result": ["a"]}
    assert answer[1]["id"] == "two"
    assert answer[1]["error"]["code"] == METHOD_NOT_FOUND
    assert answer[2]["id"] is None
    assert answer[2]["error"]["code"] == INVALID_REQUEST
    assert len(answer) == 3
    assert seen == ["note"]


async def test_a_batch_of_notifications_only_gets_no_answer() -> None:
    async with raw_to_peer() as (raw, _):
        note = orjson.dumps({"jsonrpc": "2.0", "method": "note"})
        await raw.send(b"[" + note + b"," + note + b"]")
        answer = await exchange(raw, req(9))
    assert answer == {"jsonrpc": "2.0", "id": 9, "result": None}


async def test_an_empty_batch_gets_a_single_invalid_request_error() -> None:
    async with raw_to_peer() as (raw, _):
        answer = await exchange(raw, b"[]")
    assert isinstance(answer, dict)
    assert answer["id"] is None
    assert answer["error"]["code"] == INVALID_REQUEST


async def test_a_response_inside_an_inbound_batch_resolves_the_waiting_request() -> None:
    async with raw_to_peer() as (raw, peer), anyio.create_task_group() as tg:
        results: list[Any] = []

        async def ask() -> None:
            results.append(await peer.request("ping"))

        tg.start_soon(ask)
        with anyio.fail_after(5):
            sent = orjson.loads(await raw.receive())
        response = orjson.dumps({"jsonrpc": "2.0", "id": sent["id"], "result": "pong"})
        answer = await exchange(raw, b"[" + response + b"," + req(2, params=[2]) + b"]")
    assert results == ["pong"]
    assert answer == [{"jsonrpc": "2.0", "id": 2, "result": [2]}]


# -- malformed input ------------------------------------------------------------------------


async def test_a_line_that_looks_like_json_but_is_not_gets_a_parse_error_with_a_null_id() -> None:
    async with raw_to_peer() as (raw, _):
        answer = await exchange(raw, b'  {"jsonrpc": "2.0", "id": 1,')
        after = await exchange(raw, req(2))
    assert answer["id"] is None
    assert answer["error"]["code"] == PARSE_ERROR
    assert after["id"] == 2


async def test_a_junk_line_is_logged_and_skipped(logs: Logs) -> None:
    async with raw_to_peer() as (raw, _):
        await raw.send(b"Logged in as bot#1234")
        answer = await exchange(raw, req(1, params=["still here"]))
    assert answer["result"] == ["still here"]
    (junk,) = events(logs, "junk_line_skipped")
    assert junk["detail"] == "Logged in as bot#1234"
    assert junk["peer"] == "under-test"


async def test_a_flood_of_junk_lines_is_one_line_then_one_summary_when_the_peer_stops(
    logs: Logs,
) -> None:
    async with raw_to_peer() as (raw, _):
        for _ in range(50):
            await raw.send(b"[bot] noise")
        answer = await exchange(raw, req(1, params=["still here"]))
    assert answer["result"] == ["still here"]
    junk = events(logs, "junk_line_skipped")
    assert [(j["count"], j["total"]) for j in junk] == [(1, 1), (49, 50)]
    assert all(j["log_level"] == "warning" for j in junk)


async def test_valid_json_that_is_not_a_message_gets_invalid_request_with_its_id() -> None:
    async with raw_to_peer() as (raw, _):
        number = await exchange(raw, b"42")
        no_method = await exchange(raw, b'{"jsonrpc":"2.0","id":"q"}')
        old = await exchange(raw, b'{"jsonrpc":"1.0","id":5,"method":"echo"}')
    assert (number["id"], number["error"]["code"]) == (None, INVALID_REQUEST)
    assert (no_method["id"], no_method["error"]["code"]) == ("q", INVALID_REQUEST)
    assert (old["id"], old["error"]["code"]) == (5, INVALID_REQUEST)


async def test_an_oversized_frame_is_refused_and_the_link_lives_on(logs: Logs) -> None:
    async with raw_to_peer(max_frame=120) as (raw, _):
        refused = await exchange(raw, req(1, params=["x" * 200]))
        answer = await exchange(raw, req(2, params=["small"]))
    assert refused["id"] is None
    assert refused["error"] == {
        "code": INVALID_REQUEST,
        "message": "Invalid Request: frame exceeds 120 bytes",
    }
    assert answer["result"] == ["small"]
    assert events(logs, "frame_too_large")


# -- handler errors -------------------------------------------------------------------------


async def test_a_peer_without_a_request_handler_answers_every_request_method_not_found() -> None:
    async with raw_to_peer(on_request=None) as (raw, _):
        answer = await exchange(raw, req(1, method="anything"))
    assert answer["error"]["code"] == METHOD_NOT_FOUND


async def test_an_unknown_method_gets_method_not_found_from_the_handler() -> None:
    async with raw_to_peer() as (raw, _):
        answer = await exchange(raw, req(1, method="nope"))
    assert answer["error"] == {
        "code": METHOD_NOT_FOUND,
        "message": "Method not found",
        "data": {"method": "nope"},
    }


class Params(pydantic.BaseModel):
    channel: str
    limit: int


async def validating(method: str, params: Any) -> Any:
    return Params.model_validate(params).model_dump()


async def test_a_validation_error_becomes_invalid_params_without_input_values() -> None:
    async with raw_to_peer(on_request=validating) as (raw, _):
        answer = await exchange(raw, req(1, params={"channel": 7, "limit": "hunter2-secret"}))
    error = answer["error"]
    assert error["code"] == INVALID_PARAMS
    assert {entry["field"] for entry in error["data"]["errors"]} == {"channel", "limit"}
    assert "hunter2-secret" not in orjson.dumps(answer).decode()
    assert "pydantic" not in orjson.dumps(answer).decode()


async def test_an_unexpected_exception_becomes_internal_error_without_internals(
    logs: Logs,
) -> None:
    async def broken(method: str, params: Any) -> Any:
        raise RuntimeError("db password is hunter2")

    async with raw_to_peer(on_request=broken) as (raw, _):
        answer = await exchange(raw, req(1))
    assert answer == {
        "jsonrpc": "2.0",
        "id": 1,
        "error": {"code": INTERNAL_ERROR, "message": "Internal error"},
    }
    (failure,) = events(logs, "request_handler_failed")
    assert isinstance(failure["exc_info"], RuntimeError)


async def test_an_exception_with_its_own_wire_form_is_sent_as_that_error() -> None:
    class Denied(Exception):
        def to_wire(self) -> dict[str, Any]:
            return {"code": -32002, "message": "Capability denied", "data": {"capability": "c"}}

    async def refusing(method: str, params: Any) -> Any:
        raise Denied

    async with raw_to_peer(on_request=refusing) as (raw, _):
        answer = await exchange(raw, req("r"))
    assert answer["error"] == {
        "code": -32002,
        "message": "Capability denied",
        "data": {"capability": "c"},
    }


async def test_a_result_that_is_not_json_becomes_internal_error() -> None:
    async def odd(method: str, params: Any) -> Any:
        return object()

    async with raw_to_peer(on_request=odd) as (raw, _):
        answer = await exchange(raw, req(1))
    assert answer["error"]["code"] == INTERNAL_ERROR


async def test_a_handler_that_raises_is_answered_exactly_once() -> None:
    async def flaky(method: str, params: Any) -> Any:
        if method == "fail":
            raise RpcError(-32000, "failed")
        return "ok"

    async with raw_to_peer(on_request=flaky) as (raw, _):
        first = await exchange(raw, req(1, method="fail"))
        second = await exchange(raw, req(2, method="fine"))
    assert first["error"]["message"] == "failed"
    assert second == {"jsonrpc": "2.0", "id": 2, "result": "ok"}


# -- outbound requests ----------------------------------------------------------------------


async def test_a_remote_error_is_raised_as_rpc_error_with_code_message_and_data() -> None:
    async def refuse(method: str, params: Any) -> Any:
        raise RpcError(-32017, "Channel not permitted", {"channelId": params["id"]})

    a_link, b_link = memory_link_pair()
    a, b = Peer(a_link, name="a"), Peer(b_link, on_request=refuse, name="b")
    async with serving(a, b):
        with pytest.raises(RpcError) as caught:
            await a.request("channels/open", {"id": "c1"})
    assert (caught.value.code, caught.value.message) == (-32017, "Channel not permitted")
    assert caught.value.data == {"channelId": "c1"}


async def test_notifications_reach_the_handler_in_arrival_order() -> None:
    seen: list[int] = []

    async def on_note(method: str, params: Any) -> None:
        await anyio.lowlevel.checkpoint()
        seen.append(params["n"])

    a_link, b_link = memory_link_pair()
    a, b = Peer(a_link), Peer(b_link, on_request=echo, on_notification=on_note)
    async with serving(a, b):
        for n in range(300):
            await a.notify("tick", {"n": n})
        assert await a.request("echo", ["fence"]) == ["fence"]
    assert seen == list(range(300))


async def test_many_concurrent_requests_each_get_their_own_result() -> None:
    a_link, b_link = memory_link_pair()
    a, b = Peer(a_link), Peer(b_link, on_request=echo)
    results: dict[int, Any] = {}

    async def ask(n: int) -> None:
        results[n] = await a.request("echo", {"n": n})

    async with serving(a, b):
        with anyio.fail_after(5):
            async with anyio.create_task_group() as tg:
                for n in range(500):
                    tg.start_soon(ask, n)
    assert results == {n: {"n": n} for n in range(500)}
    stats = a.statistics()
    assert (stats.requests_sent, stats.awaiting_response) == (500, 0)
    assert b.statistics().requests_received == 500


# -- ordering, pipelining and reentrancy ----------------------------------------------------


async def test_a_deferred_result_lets_the_next_request_run_and_both_complete() -> None:
    second_ran = anyio.Event()
    order: list[str] = []

    async def handler(method: str, params: Any) -> Any:
        order.append(f"handled {method}")
        if method == "first":

            async def later() -> str:
                await second_ran.wait()
                return "first done"

            return Deferred(later)
        second_ran.set()
        return "second done"

    a_link, b_link = memory_link_pair()
    a, b = Peer(a_link), Peer(b_link, on_request=handler)
    results: dict[str, Any] = {}

    async def ask(method: str) -> None:
        results[method] = await a.request(method)

    async with serving(a, b):
        with anyio.fail_after(5):
            async with anyio.create_task_group() as tg:
                tg.start_soon(ask, "first")
                await anyio.lowlevel.checkpoint()
                tg.start_soon(ask, "second")
    assert results == {"first": "first done", "second": "second done"}
    assert order == ["handled first", "handled second"]


async def test_a_deferred_that_raises_is_answered_with_its_error() -> None:
    async def handler(method: str, params: Any) -> Any:
        async def fail() -> None:
            raise RpcError(-32000, "durability wait failed")

        return Deferred(fail())

    async with raw_to_peer(on_request=handler) as (raw, _):
        answer = await exchange(raw, req(1))
        again = await exchange(raw, req(2))
    assert answer["error"]["message"] == "durability wait failed"
    assert again["id"] == 2


async def test_a_handler_can_ask_back_before_answering_without_deadlock() -> None:
    """While A awaits B.request-style traffic, B's handler first asks A and waits for it."""
    b_peer: list[Peer] = []

    async def a_handler(method: str, params: Any) -> Any:
        return {"asked": method}

    async def b_handler(method: str, params: Any) -> Any:
        inner = await b_peer[0].request("channels/register", {"from": "b"})
        return {"outer": method, "inner": inner}

    a_link, b_link = memory_link_pair()
    a = Peer(a_link, on_request=a_handler, name="host")
    b = Peer(b_link, on_request=b_handler, name="connector")
    b_peer.append(b)
    async with serving(a, b):
        with anyio.fail_after(5):
            result = await a.request("initialize")
    assert result == {"outer": "initialize", "inner": {"asked": "channels/register"}}


async def test_a_handler_awaiting_its_own_request_still_gets_the_response() -> None:
    """The reader resolves responses while the dispatcher is busy inside a handler."""
    a_peer: list[Peer] = []

    async def a_handler(method: str, params: Any) -> Any:
        return await a_peer[0].request("echo", ["from a's handler"])

    a_link, b_link = memory_link_pair()
    a = Peer(a_link, on_request=a_handler)
    b = Peer(b_link, on_request=echo)
    a_peer.append(a)
    async with serving(a, b):
        with anyio.fail_after(5):
            assert await b.request("anything") == ["from a's handler"]


# -- timeouts, cancellation, closing --------------------------------------------------------


async def never(method: str, params: Any) -> Any:
    await anyio.sleep_forever()


async def test_a_request_without_a_response_times_out(logs: Logs) -> None:
    release = anyio.Event()

    async def slow(method: str, params: Any) -> Any:
        await release.wait()
        return "late"

    a_link, b_link = memory_link_pair()
    a, b = Peer(a_link, default_timeout=None), Peer(b_link, on_request=slow)
    async with serving(a, b):
        with pytest.raises(RequestTimeoutError, match="'slow'"):
            await a.request("slow", timeout=0.05)
        assert a.statistics().awaiting_response == 0
        release.set()
        with anyio.fail_after(5):
            while not events(logs, "late_response_dropped"):
                await anyio.lowlevel.checkpoint()


async def test_the_default_timeout_applies_when_none_is_given() -> None:
    a_link, b_link = memory_link_pair()
    a, b = Peer(a_link, default_timeout=0.05), Peer(b_link, on_request=never)
    async with serving(a, b):
        with pytest.raises(RequestTimeoutError):
            await a.request("x")


async def test_a_cancelled_request_removes_its_waiter_and_the_peer_carries_on() -> None:
    a_link, b_link = memory_link_pair()
    a, b = Peer(a_link), Peer(b_link, on_request=never)
    async with serving(a, b):
        with anyio.CancelScope() as scope:
            async with anyio.create_task_group() as tg:
                tg.start_soon(a.request, "x")
                await anyio.wait_all_tasks_blocked()
                assert a.statistics().awaiting_response == 1
                scope.cancel()
        assert a.statistics().awaiting_response == 0
        assert not a.closed


async def test_closing_fails_outstanding_requests_with_link_closed_error() -> None:
    a_link, b_link = memory_link_pair()
    a, b = Peer(a_link, name="host"), Peer(b_link, on_request=never)
    errors: list[Exception] = []

    async def ask() -> None:
        try:
            await a.request("x")
        except LinkClosedError as exc:
            errors.append(exc)

    async with serving(a, b), anyio.create_task_group() as tg:
        tg.start_soon(ask)
        await anyio.wait_all_tasks_blocked()
        await a.aclose()
    (error,) = errors
    assert "may or may not have been processed" in str(error)
    assert "memory:" in str(error)
    with pytest.raises(LinkClosedError):
        await a.request("y")
    with pytest.raises(LinkClosedError):
        await a.notify("y")


async def test_the_remote_closing_ends_run_and_fails_outstanding_requests() -> None:
    a_link, b_link = memory_link_pair()
    a = Peer(a_link)
    errors: list[Exception] = []

    async def ask() -> None:
        try:
            await a.request("x")
        except LinkClosedError as exc:
            errors.append(exc)

    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            tg.start_soon(a.run)
            tg.start_soon(ask)
            await anyio.wait_all_tasks_blocked()
            await b_link.aclose()
    assert len(errors) == 1
    assert a.closed


async def test_a_peer_shutting_down_answers_the_requests_it_still_holds() -> None:
    async with raw_to_peer(on_request=never) as (raw, peer):
        await raw.send(req(1))
        await raw.send(req(2))
        await anyio.wait_all_tasks_blocked()
        await peer.aclose()
        with anyio.fail_after(5):
            answers = [orjson.loads(await raw.receive()) for _ in range(2)]
    assert [answer["id"] for answer in answers] == [1, 2]
    assert {answer["error"]["code"] for answer in answers} == {INTERNAL_ERROR}


async def test_a_peer_closed_before_it_ran_does_not_run() -> None:
    a_link, _ = memory_link_pair()
    peer = Peer(a_link)
    await peer.aclose()
    with anyio.fail_after(5):
        await peer.run()
    assert peer.closed


async def test_a_request_stuck_behind_a_stalled_link_still_times_out() -> None:
    raw, other = memory_link_pair(buffer=0)  # nobody reads raw: every send blocks
    peer = Peer(other)
    async with serving(peer):
        with anyio.fail_after(5), pytest.raises(RequestTimeoutError):
            await peer.request("x", timeout=0.05)
        assert peer.statistics().awaiting_response == 0
    await raw.aclose()


async def test_cancelling_one_caller_never_drops_another_callers_frame() -> None:
    raw, other = memory_link_pair(buffer=0)
    peer = Peer(other)
    results: list[Any] = []
    first_scope = anyio.CancelScope()

    async def first() -> None:
        with first_scope:
            await peer.request("first")

    async def second() -> None:
        results.append(await peer.request("second"))

    async with serving(peer):
        with anyio.fail_after(5):
            async with anyio.create_task_group() as tg:
                tg.start_soon(first)
                await anyio.wait_all_tasks_blocked()  # "first" is stuck writing
                tg.start_soon(second)
                await anyio.wait_all_tasks_blocked()  # "second" is queued behind it
                first_scope.cancel()
                await anyio.wait_all_tasks_blocked()
                sent = orjson.loads(await raw.receive())
                assert sent["method"] == "second"
                await raw.send(orjson.dumps({"jsonrpc": "2.0", "id": sent["id"], "result": 2}))
    assert results == [2]


# -- wire order of on_response ---------------------------------------------------------------


async def test_on_response_runs_after_the_requests_read_before_it_and_before_those_after() -> None:
    """A policy receipt must not overtake a register sent before it (MCPL §5.3, H-05)."""
    seen: list[str] = []
    ready = False

    async def judge(method: str, params: Any) -> Any:
        seen.append(f"{method}:{'ready' if ready else 'not-ready'}")
        return {}

    def receipt(result: Any) -> None:
        nonlocal ready
        ready = True
        seen.append("receipt")

    async with raw_to_peer(on_request=judge) as (raw, peer), anyio.create_task_group() as tg:
        done = anyio.Event()

        async def ask() -> None:
            await peer.request("policy", on_response=receipt)
            done.set()

        tg.start_soon(ask)
        with anyio.fail_after(5):
            sent = orjson.loads(await raw.receive())
            response = orjson.dumps({"jsonrpc": "2.0", "id": sent["id"], "result": {}})
            await raw.send_many([req("a", "before"), response, req("b", "after")])
            answers = [orjson.loads(await raw.receive()) for _ in range(2)]
            await done.wait()
    assert seen == ["before:not-ready", "receipt", "after:ready"]
    assert [a["id"] for a in answers] == ["a", "b"]
