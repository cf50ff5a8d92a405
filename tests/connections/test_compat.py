"""Compatibility with pre-0.5 connectors (issue #10, item 2; docs/compatibility.md).

Held early messages, the 0.4 reading of a manifest, 0.4 push rules, the ``compat`` switch, and
pushes that name a channel by its platform-native id. Over an in-memory link to a scripted
connector (tests/fake.py) or raw frames where the order of frames on the wire matters; the
real-subprocess versions of each peer live in tests/integration/peers/.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, MutableMapping
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import orjson
import pytest

from switchboard.app.board import Switchboard
from switchboard.channels import ChannelRef
from switchboard.config import Config, ConnectorConfig, StoreConfig
from switchboard.connections.compat import HeldMessages, legacy_reading, pre05_reason
from switchboard.connections.session import SessionState
from switchboard.protocol import parse_manifest
from switchboard.runtime.ratelog import RateLimitedLog
from switchboard.store.sqlite import MessageStore
from switchboard.transport import MemoryLink, RpcError, memory_link_pair
from tests.fake import FakeConnector, board_with, descriptor, message

pytestmark = pytest.mark.anyio

OLD_ARRAY = {
    "version": "0.4",
    "pushEvents": True,
    "channels": True,
    "featureSets": [
        {"name": "chat.messaging", "uses": ["channels.publish"], "hostState": False},
    ],
}
"""A 0.4 advertisement whose set does not list pushEvents (as matrix_mcpl's)."""

PUSH = {
    "featureSet": "chat.messaging",
    "eventId": "e1",
    "timestamp": "2026-11-29T12:00:00Z",
    "payload": {"content": [{"type": "text", "text": "tick"}]},
}


def frame(obj: dict[str, Any]) -> bytes:
    return orjson.dumps({"jsonrpc": "2.0", **obj})


@asynccontextmanager
async def raw_board(tmp_path: Path, **config: Any) -> AsyncIterator[tuple[Switchboard, MemoryLink]]:
    """A Switchboard serving connector ``s1`` whose far end the test writes frame by frame."""
    store = await MessageStore.open(tmp_path / "s.sqlite")
    cc = ConnectorConfig(id="s1", command=["unused"], **config)
    board = Switchboard(Config(connectors=[cc], store=StoreConfig(path="unused")), store)
    host_link, far = memory_link_pair()
    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(board.serve_link, cc, host_link)
            yield board, far
            tg.cancel_scope.cancel()
    finally:
        await store.aclose()


async def receive_until(far: MemoryLink, pred: Any) -> dict[str, Any]:
    while True:
        msg: dict[str, Any] = orjson.loads(await far.receive())
        if pred(msg):
            return msg


async def answer_initialize(far: MemoryLink, mcpl: dict[str, Any]) -> dict[str, Any]:
    """Answer ``initialize`` with ``mcpl``; return the policy Request that follows."""
    init = await receive_until(far, lambda m: m.get("method") == "initialize")
    result = {"capabilities": {"experimental": {"mcpl": mcpl}, "tools": {}}}
    await far.send(frame({"id": init["id"], "result": result}))
    return await receive_until(far, lambda m: m.get("method") == "featureSets/update")


def is_answer(msg: dict[str, Any]) -> bool:
    return "id" in msg and "method" not in msg


REGISTER = {"id": "r1", "method": "channels/register", "params": {"channels": [descriptor("a")]}}


async def test_a_0_4_connector_registering_before_its_receipt_is_held_and_then_accepted(
    tmp_path: Path, logs: list[MutableMapping[str, Any]]
) -> None:
    """matrix_mcpl's order (peers.md §3): register after the policy Request, before the receipt.

    The register is held, not refused with -32002, and judged once the receipt is read.
    """
    async with raw_board(tmp_path) as (board, far):
        with anyio.fail_after(10):
            policy = await answer_initialize(far, OLD_ARRAY)
            receipt = frame({"id": policy["id"], "result": {"accepted": True, "mode": "full"}})
            await far.send_many([frame(REGISTER), receipt])
            answer = await receive_until(far, lambda m: m.get("id") == "r1")
        assert answer["result"]["results"] == [{"id": "a", "accepted": True}]
        assert ChannelRef("s1", "a") in board.registry
    assert [e["method"] for e in logs if e["event"] == "held_until_policy"] == ["channels/register"]


async def test_a_0_5_connector_registering_before_its_receipt_is_still_refused(
    tmp_path: Path,
) -> None:
    """H-05 (§5.3): a strict 0.5 connector's early privileged request gets -32002 at once."""
    mcpl = {"version": "0.5", "channels": {"register": True}}
    async with raw_board(tmp_path) as (board, far):
        with anyio.fail_after(10):
            policy = await answer_initialize(far, mcpl)
            await far.send(frame(REGISTER))
            answer = await receive_until(far, lambda m: m.get("id") == "r1")
            await far.send(frame({"id": policy["id"], "result": {"accepted": True}}))
        assert answer["error"]["code"] == -32002
        assert answer["error"]["data"] == {"capability": "channels.register"}
        assert ChannelRef("s1", "a") not in board.registry


async def test_compat_strict_refuses_a_0_4_connectors_early_register(tmp_path: Path) -> None:
    """H-05 kept for every connector under ``compat = "strict"``."""
    async with raw_board(tmp_path, compat="strict") as (_board, far):
        with anyio.fail_after(10):
            policy = await answer_initialize(far, OLD_ARRAY)
            await far.send_many(
                [frame(REGISTER), frame({"id": policy["id"], "result": {"accepted": True}})]
            )
            answer = await receive_until(far, lambda m: m.get("id") == "r1")
    assert answer["error"]["code"] == -32002


async def test_compat_lenient_holds_an_early_register_from_a_connector_claiming_0_5(
    tmp_path: Path,
) -> None:
    mcpl = {"version": "0.5", "channels": {"register": True}}
    async with raw_board(tmp_path, compat="lenient") as (board, far):
        with anyio.fail_after(10):
            policy = await answer_initialize(far, mcpl)
            await far.send_many(
                [frame(REGISTER), frame({"id": policy["id"], "result": {"accepted": True}})]
            )
            answer = await receive_until(far, lambda m: m.get("id") == "r1")
        assert answer["result"]["results"] == [{"id": "a", "accepted": True}]
        assert board.sessions["s1"].compat_reason == "compat = lenient"


async def test_held_messages_are_judged_in_arrival_order_with_later_ones_behind_them(
    tmp_path: Path,
) -> None:
    """Held register, changed and incoming are answered in the order they were sent."""
    incoming = {
        "id": "r3",
        "method": "channels/incoming",
        "params": {"messages": [message("a", "m1")]},
    }
    changed = {
        "id": "r2",
        "method": "channels/changed",
        "params": {"added": [descriptor("b")], "removed": []},
    }
    async with raw_board(tmp_path) as (board, far):
        with anyio.fail_after(10):
            policy = await answer_initialize(far, OLD_ARRAY)
            await far.send_many([frame(REGISTER), frame(changed), frame(incoming)])
            await far.send(frame({"id": policy["id"], "result": {"accepted": True}}))
            answers = [await receive_until(far, is_answer) for _ in range(3)]
            stored = await board.store.read(0, 10)
        assert [a["id"] for a in answers] == ["r1", "r2", "r3"]
        assert answers[2]["result"]["results"][0]["accepted"] is True
        assert {ChannelRef("s1", "a"), ChannelRef("s1", "b")} <= {
            e.ref for e in board.registry.entries()
        }
        assert [m.message_id for m in stored] == ["m1"]


async def test_held_messages_are_refused_when_the_policy_is_refused(tmp_path: Path) -> None:
    """A refusing receipt leaves no grant: what was held is then judged and refused -32002."""
    async with raw_board(tmp_path) as (board, far):
        with anyio.fail_after(10):
            policy = await answer_initialize(far, OLD_ARRAY)
            refused = {"accepted": False, "fallback": "mcp-only", "reason": "no"}
            await far.send_many([frame(REGISTER), frame({"id": policy["id"], "result": refused})])
            answer = await receive_until(far, lambda m: m.get("id") == "r1")
        assert answer["error"]["code"] == -32002
        assert board.sessions["s1"].state is SessionState.MCP_ONLY


async def test_a_connector_that_waits_on_its_held_register_gets_the_policy_as_a_notification(
    tmp_path: Path, logs: list[MutableMapping[str, Any]]
) -> None:
    """The register-before-policy deadlock (peers.md §2, §5): the connector awaits its own
    register before it reads the policy Request. After the grace the policy goes out as a
    0.4 Notification and the held register is accepted."""
    answers: list[Any] = []
    fake = FakeConnector(mcpl=dict(OLD_ARRAY), policy="method-not-found")

    async def register_first(method: str, params: Any) -> None:
        fake.notifications.append((method, params))
        if method == "notifications/initialized":
            answers.append(await fake.call("channels/register", {"channels": [descriptor("a")]}))

    fake.on_notification = register_first  # type: ignore[method-assign]
    async with board_with(tmp_path, fake) as board:
        with anyio.fail_after(10):
            while not fake.got("featureSets/update"):  # the Request, read once unblocked
                await anyio.lowlevel.checkpoint()
        session = board.sessions["s1"]
        assert session.state is SessionState.READY
        assert session.legacy_policy
        assert ChannelRef("s1", "a") in board.registry
    assert answers == [{"results": [{"id": "a", "accepted": True}]}]
    policies = [p for m, p in fake.notifications if m == "featureSets/update"]
    assert len(policies) == 1  # the late -32601 sends no second Notification
    assert any(e["event"] == "policy_unanswered_while_held" for e in logs)


async def test_a_0_4_push_is_judged_by_the_grant_not_by_its_sets_declaration(
    tmp_path: Path,
) -> None:
    """heartbeat/dog-events/matrix (peers.md §3, §4, §7): sets list only ``tools`` but push.

    0.4 rules: the push is accepted when the set is enabled and pushEvents is granted.
    """
    fake = FakeConnector(mcpl=dict(OLD_ARRAY), policy="method-not-found")
    async with board_with(tmp_path, fake) as board:
        assert await fake.call("push/event", PUSH) == {"accepted": True}
        stored = await board.store.read(0, 10)
    assert [m.message_id for m in stored] == ["event:e1"]


async def test_a_0_4_push_is_still_refused_without_the_push_grant(tmp_path: Path) -> None:
    fake = FakeConnector(mcpl=dict(OLD_ARRAY), policy="method-not-found")
    async with board_with(tmp_path, fake, grant=["channels.*", "tools"]) as _board:
        with pytest.raises(RpcError) as denied:
            await fake.call("push/event", PUSH)
    assert denied.value.code == -32002
    assert denied.value.data == {"capability": "pushEvents"}


async def test_under_compat_strict_a_0_4_push_fails_the_declaration_check(tmp_path: Path) -> None:
    """H-21 (§6.4 rule 2) applies to every connector under ``compat = "strict"``."""
    fake = FakeConnector(mcpl=dict(OLD_ARRAY))
    async with board_with(tmp_path, fake, compat="strict"):
        with pytest.raises(RpcError) as denied:
            await fake.call("push/event", PUSH)
    assert denied.value.code == -32002


async def test_under_compat_strict_a_policy_request_answered_32601_leaves_mcp_only(
    tmp_path: Path,
) -> None:
    async with raw_board(tmp_path, compat="strict") as (board, far):
        with anyio.fail_after(10):
            policy = await answer_initialize(far, OLD_ARRAY)
            error = {"code": -32601, "message": "Method not found"}
            await far.send(frame({"id": policy["id"], "error": error}))
            while board.sessions["s1"].state is SessionState.CONNECTING:
                await anyio.lowlevel.checkpoint()
        assert board.sessions["s1"].state is SessionState.MCP_ONLY
        assert not board.sessions["s1"].legacy_policy


def test_auto_reads_these_advertisements_as_pre_0_5_and_a_plain_0_5_one_as_not() -> None:
    def reason(mcpl: dict[str, Any]) -> str | None:
        manifest = parse_manifest({"capabilities": {"experimental": {"mcpl": mcpl}}})
        assert manifest is not None
        return pre05_reason(manifest, "auto")

    assert reason({"version": "0.4"}) is not None
    assert reason({}) is not None  # no version at all
    assert reason({"version": "0.5", "featureSets": []}) is not None
    assert reason({"version": "0.5", "channels": True}) is not None
    editor_like = {"version": "0.5", "featureSets": {"x": {"name": "x", "uses": ["tools"]}}}
    assert reason(editor_like) is not None
    assert reason({"version": "0.5", "channels": {"register": True}}) is None
    assert reason({"version": "0.10"}) is None
    assert reason({"version": "1.0", "featureSets": {"x": {"uses": ["tools"]}}}) is None


def test_the_0_4_reading_takes_any_channels_shape_as_every_channel_leaf_and_drops_odd_uses() -> (
    None
):
    """mcpl-editor (peers.md §5): a channels object with ``observe``; sets using non-paths."""
    mcpl = {
        "version": "0.5",
        "pushEvents": True,
        "channels": {"register": True, "publish": True, "observe": True},
        "featureSets": {
            "editor.observe": {"name": "editor.observe", "uses": ["pushEvents", "stateUpdate"]},
            "editor.branches": {"name": "editor.branches", "uses": ["branches"]},
        },
    }
    manifest = parse_manifest({"capabilities": {"experimental": {"mcpl": mcpl}}})
    assert manifest is not None
    read = legacy_reading(manifest)
    assert "channels.incoming" in read.advertised
    assert "channels.typing" in read.advertised
    assert read.feature_sets["editor.observe"].uses == ("pushEvents",)
    assert read.feature_sets["editor.observe"].valid
    assert not read.feature_sets["editor.branches"].valid  # nothing servable is left
    assert not manifest.feature_sets["editor.observe"].valid  # the original is untouched


async def test_a_full_hold_queue_judges_further_messages_at_once() -> None:
    judged: list[str] = []

    async def judge(method: str, params: Any, notification: bool) -> Any:
        judged.append(params)
        return params

    class Log:
        def warning(self, *args: Any, **kw: Any) -> None: ...
        def info(self, *args: Any, **kw: Any) -> None: ...

    held = HeldMessages(judge, RateLimitedLog(Log()), limit=2)
    first = held.hold("channels/register", "one", notification=False)
    second = held.hold("channels/register", "two", notification=False)
    assert first is not None
    assert second is not None
    assert held.hold("channels/register", "three", notification=False) is None
    async with anyio.create_task_group() as tg:
        tg.start_soon(held.run)
        held.release()
        with anyio.fail_after(5):
            assert await first.wait() == "one"
            assert await second.wait() == "two"
        tg.cancel_scope.cancel()
    assert judged == ["one", "two"]


async def test_a_push_naming_only_the_native_channel_id_lands_on_that_channel(
    tmp_path: Path,
) -> None:
    """The toy server's and discord-mcpl's edit pushes (peers.md §2, §6): ``origin.channelId``
    is the platform id, matched to the descriptor's ``address.channelId``."""
    fake = FakeConnector(
        mcpl={
            "version": "0.5",
            "pushEvents": True,
            "channels": {"register": True, "incoming": True},
            "featureSets": {"toy": {"description": "d", "uses": ["pushEvents"]}},
        }
    )
    lobby = descriptor("toy:lobby", address={"channelId": "raw-lobby"})
    twin_a = descriptor("toy:a", address={"channelId": "shared"})
    twin_b = descriptor("toy:b", address={"channelId": "shared"})
    push = {**PUSH, "featureSet": "toy"}
    async with board_with(tmp_path, fake) as board:
        await fake.call("channels/register", {"channels": [lobby, twin_a, twin_b]})
        await fake.call(
            "push/event", {**push, "eventId": "n1", "origin": {"channelId": "raw-lobby"}}
        )
        await fake.call("push/event", {**push, "eventId": "n2", "origin": {"channelId": "toy:a"}})
        await fake.call("push/event", {**push, "eventId": "n3", "origin": {"channelId": "shared"}})
        await fake.call(
            "push/event",
            {
                **push,
                "eventId": "n4",
                "origin": {"mcplChannelId": "gone", "channelId": "raw-lobby"},
            },
        )
        stored = await board.store.read(0, 10)
    where = {m.message_id: m.channel_id for m in stored}
    assert where == {
        "event:n1": "toy:lobby",
        "event:n2": "toy:a",  # an MCPL id in channelId is taken as it is
        "event:n3": "",  # two channels share the native id: neither is guessed
        "event:n4": "toy:lobby",
    }
