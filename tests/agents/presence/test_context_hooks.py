"""``context/beforeInference`` at the start of a turn (mcpl-protocol.md 3.9; H-04, H-23..H-29)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest

from switchboard.app.board import Switchboard
from switchboard.config import DEFAULT_GRANT
from switchboard.connections.session import SessionState
from switchboard.protocol import Grant
from switchboard.transport import RpcError
from tests.fake import FakeConnector, board_of, board_with, descriptor, message

pytestmark = pytest.mark.anyio

HOOK = "context/beforeInference"
OBSERVE = "contextHooks.beforeInference.observe"


def inject(position: str) -> str:
    return f"contextHooks.beforeInference.inject.{position}"


def answering(*injections: Any, feature_set: str = "anything") -> FakeConnector:
    async def answer(method: str, params: Any) -> Any:
        return {"featureSet": feature_set, "contextInjections": list(injections)}

    return FakeConnector(extra={HOOK: answer})


NO_HOOKS = [p for p in DEFAULT_GRANT if not p.startswith("contextHooks.")]


def grant(board: Switchboard, server_id: str, *paths: str) -> None:
    board.sessions[server_id].grant = Grant([*NO_HOOKS, *paths])


def item(position: str, text: str, **extra: Any) -> dict[str, Any]:
    return {"namespace": "ns", "position": position, "content": text, **extra}


async def gather(board: Switchboard, user_message: str | None = None) -> list[dict[str, Any]]:
    """What the connectors add when ann's turn begins with ``user_message``."""
    desk = board.desks.for_agent("ann")
    return await board.context_hooks.gather(desk, user_message=user_message)


async def test_servers_granted_the_hook_are_asked_and_only_observers_see_the_user_text(
    tmp_path: Path,
) -> None:
    """H-24, H-25, H-23: observe gets userMessage; inject-only gets null; others nothing."""
    fa, fb, fc = answering(), answering(), answering()
    async with board_of(tmp_path, {"a": fa, "b": fb, "c": fc}) as board:
        grant(board, "a", OBSERVE)
        grant(board, "b", inject("beforeUser"))
        assert await gather(board, "hello") == []
        [to_a] = fa.got(HOOK)
        [to_b] = fb.got(HOOK)
        assert fc.got(HOOK) == []
    assert to_a["userMessage"] == "hello"
    assert to_b["userMessage"] is None
    assert to_a["inferenceId"] == to_b["inferenceId"]
    assert to_a["conversationId"] == "ann"
    assert to_a["turnIndex"] == 0
    assert to_a["model"] == {
        "id": "unknown",
        "vendor": "unknown",
        "contextWindow": 0,
        "capabilities": [],
    }


async def test_each_injection_is_kept_only_if_its_own_position_is_granted(
    tmp_path: Path,
) -> None:
    """H-26, H-28: per-injection authorization; the claimed featureSet plays no part."""
    fa = answering(
        item("system", "sneaky"),
        item("afterUser", "after"),
        item("beforeUser", "before", metadata={"k": 1}),
        item("sideways", "unknown position"),
        {"position": "beforeUser", "content": "no namespace"},
        item("beforeUser", "bad content", content=[{"no": "type"}]),
        feature_set="system-privileged",
    )
    fb = answering({"namespace": "b", "position": "system", "content": [{"type": "text"}]})
    async with board_of(tmp_path, {"a": fa, "b": fb}) as board:
        grant(board, "a", inject("beforeUser"), inject("afterUser"))
        grant(board, "b", inject("system"))
        got = await gather(board, "hi")
    assert got == [
        {"serverId": "b", "namespace": "b", "position": "system", "content": [{"type": "text"}]},
        {
            "serverId": "a",
            "namespace": "ns",
            "position": "beforeUser",
            "content": [{"type": "text", "text": "before"}],
            "metadata": {"k": 1},
        },
        {
            "serverId": "a",
            "namespace": "ns",
            "position": "afterUser",
            "content": [{"type": "text", "text": "after"}],
        },
    ]


async def test_injections_are_checked_against_the_grant_when_the_answer_arrives(
    tmp_path: Path,
) -> None:
    """H-27: a grant narrowed while the hook is in flight drops what it no longer covers."""
    asked = anyio.Event()
    answer_now = anyio.Event()

    async def slow(method: str, params: Any) -> Any:
        asked.set()
        await answer_now.wait()
        return {"featureSet": "x", "contextInjections": [item("system", "late")]}

    fa = FakeConnector(extra={HOOK: slow})
    async with board_of(tmp_path, {"a": fa}) as board:
        grant(board, "a", inject("system"))
        got: list[Any] = []

        async def turn() -> None:
            got.extend(await gather(board))

        with anyio.fail_after(5):
            async with anyio.create_task_group() as tg:
                tg.start_soon(turn)
                await asked.wait()
                grant(board, "a", OBSERVE)
                answer_now.set()
    assert got == []


async def test_a_server_that_does_not_answer_in_time_or_fails_adds_nothing(
    tmp_path: Path,
) -> None:
    """H-29: a timeout or an error answer is skipped and the turn goes on."""

    async def never(method: str, params: Any) -> Any:
        await anyio.sleep_forever()

    async def fails(method: str, params: Any) -> Any:
        raise RpcError(-32603, "broken")

    fa = FakeConnector(extra={HOOK: never})
    fb = FakeConnector(extra={HOOK: fails})
    fc = answering(item("afterUser", "kept"))
    async with board_of(tmp_path, {"a": fa, "b": fb, "c": fc}) as board:
        for sid in ("a", "b", "c"):
            grant(board, sid, inject("afterUser"))
        # Long enough that the server that answers at once does so within it on a loaded CI
        # machine (0.2 s was not, once); the one that never answers still costs only this.
        board.context_hooks.timeout = 1.5
        with anyio.fail_after(10):
            got = await gather(board)
    assert [(i["serverId"], i["content"][0]["text"]) for i in got] == [("c", "kept")]
    assert len(fa.got(HOOK)) == len(fb.got(HOOK)) == 1


async def test_a_server_whose_policy_exchange_is_not_complete_is_not_asked(
    tmp_path: Path,
) -> None:
    """H-04: no hook before the initial policy exchange (the session is not ready)."""
    fa = answering(item("afterUser", "x"))
    async with board_of(tmp_path, {"a": fa}) as board:
        grant(board, "a", OBSERVE, inject("afterUser"))
        session = board.sessions["a"]
        session.state = SessionState.CONNECTING
        try:
            assert await gather(board, "hi") == []
        finally:
            session.state = SessionState.READY
        assert fa.got(HOOK) == []


async def test_each_server_is_told_the_channel_context_of_its_own_channels(
    tmp_path: Path,
) -> None:
    fa, fb = answering(), answering()
    async with board_of(tmp_path, {"a": fa, "b": fb}) as board:
        grant(board, "a", OBSERVE)
        grant(board, "b", OBSERVE)
        await fa.call("channels/register", {"channels": [descriptor("room")]})
        await fb.call("channels/register", {"channels": [descriptor("room")]})
        await fb.call("channels/incoming", {"messages": [message("room", "m3")]})
        await gather(board, "hi")
        [to_a] = fa.got(HOOK)
        [to_b] = fb.got(HOOK)
    assert "incoming" not in to_a.get("channels", {})
    assert to_b["channels"]["incoming"] == {"channelId": "room", "messageId": "m3"}
    assert to_b["channels"]["defaultOutgoing"] == {"channelId": "room"}


async def test_the_hook_follows_the_grant_the_policy_exchange_settled(tmp_path: Path) -> None:
    """H-23: under a policy without contextHooks nothing is sent; a granted leaf is."""
    hooks = {"beforeInference": {"observe": True, "inject": {"afterUser": True}}}
    mcpl = {"version": "0.5", "channels": {"register": True}, "contextHooks": hooks}
    plain = answering()
    plain.mcpl = dict(mcpl)
    (tmp_path / "one").mkdir()
    async with board_with(tmp_path / "one", plain, grant=NO_HOOKS) as board:
        assert await gather(board, "hi") == []
        assert plain.got(HOOK) == []
    granted = answering(item("afterUser", "ok"))
    granted.mcpl = dict(mcpl)
    (tmp_path / "two").mkdir()
    async with board_with(tmp_path / "two", granted, grant=[inject("afterUser")]) as board:
        got = await gather(board, "hi")
        [sent] = granted.got(HOOK)
    assert sent["userMessage"] is None
    assert [i["content"] for i in got] == [[{"type": "text", "text": "ok"}]]
