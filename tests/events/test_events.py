"""The host event bus: listener order, failing listeners, and the board's subscriptions."""

from __future__ import annotations

import ast
import inspect
import textwrap
from collections.abc import Callable, MutableMapping
from pathlib import Path
from typing import Any

import pytest

from switchboard.agents.desk.defaults import DefaultChannel
from switchboard.agents.inbox.routing import Router
from switchboard.agents.presence.typing import TypingKeeper
from switchboard.channels import ChannelRef
from switchboard.events import (
    ChannelsRegistered,
    ConnectorExited,
    EventBus,
    HostEvent,
    MessagesAccepted,
)
from switchboard.lifecycle.host import LifecycleHost
from tests.fake import FakeConnector, board_of, descriptor, message
from tests.helpers import Recorder

pytestmark = pytest.mark.anyio

Logs = list[MutableMapping[str, Any]]

EXITED = ConnectorExited("s1", ("general",))


def test_listeners_hear_each_event_in_the_order_they_subscribed() -> None:
    bus = EventBus()
    heard: list[tuple[str, HostEvent]] = []

    def listener(name: str) -> Callable[[HostEvent], None]:
        return lambda event: heard.append((name, event))

    for name in ("first", "second", "third"):
        bus.subscribe(listener(name))
    registered = ChannelsRegistered("s1", ("general",))
    bus.emit(registered)
    bus.emit(EXITED)
    assert heard == [
        ("first", registered),
        ("second", registered),
        ("third", registered),
        ("first", EXITED),
        ("second", EXITED),
        ("third", EXITED),
    ]


def test_a_listener_that_takes_some_classes_hears_only_those_in_subscription_order() -> None:
    bus = EventBus()
    heard: list[tuple[str, str]] = []
    registered = ChannelsRegistered("s1", ("general",))

    def listener(name: str) -> Callable[[HostEvent], None]:
        return lambda event: heard.append((name, type(event).__name__))

    bus.subscribe(listener("all"))
    bus.subscribe(listener("exits"), takes=(ConnectorExited,))
    bus.emit(registered)  # routes are worked out per class, then a late subscriber resets them
    bus.subscribe(listener("registrations"), takes=(ChannelsRegistered, MessagesAccepted))
    bus.emit(EXITED)
    bus.emit(registered)
    assert heard == [
        ("all", "ChannelsRegistered"),
        ("all", "ConnectorExited"),
        ("exits", "ConnectorExited"),
        ("all", "ChannelsRegistered"),
        ("registrations", "ChannelsRegistered"),
    ]


@pytest.mark.parametrize("owner", [DefaultChannel, TypingKeeper, LifecycleHost, Router])
def test_a_listener_that_subscribes_to_some_classes_names_every_class_its_observe_handles(
    owner: type[Any],
) -> None:
    # The board subscribes these with takes=owner.OBSERVES: a class observe() matches but
    # OBSERVES leaves out would never reach it.
    tree = ast.parse(textwrap.dedent(inspect.getsource(owner.observe)))
    handled: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.MatchClass) and isinstance(node.cls, ast.Name):
            handled.add(node.cls.id)
        if isinstance(node, ast.Call) and getattr(node.func, "id", "") == "isinstance":
            classes = node.args[1]
            names = classes.elts if isinstance(classes, ast.Tuple) else [classes]
            while names and isinstance(names[0], ast.BinOp):  # A | B | C
                op = names.pop(0)
                assert isinstance(op, ast.BinOp)
                names[:0] = [op.left, op.right]
            handled.update(n.id for n in names if isinstance(n, ast.Name))
    assert handled, f"found no event class in {owner.__name__}.observe"
    assert handled <= {cls.__name__ for cls in owner.OBSERVES}


def test_a_listener_that_raises_is_logged_and_the_others_still_hear_the_event(
    logs: Logs,
) -> None:
    bus = EventBus()
    heard: list[str] = []

    def broken(event: HostEvent) -> None:
        heard.append("broken")
        raise RuntimeError("listener bug")

    bus.subscribe(lambda event: heard.append("before"))
    bus.subscribe(broken)
    bus.subscribe(lambda event: heard.append("after"))
    bus.emit(EXITED)  # the emitter is not disturbed either: nothing propagates
    assert heard == ["before", "broken", "after"]
    (failure,) = [e for e in logs if e["event"] == "host_event_listener_failed"]
    assert failure["event_type"] == "ConnectorExited"
    assert failure["server_id"] == "s1"
    assert failure["log_level"] == "error"


def test_a_listener_subscribed_during_an_event_hears_only_the_next_one() -> None:
    bus = EventBus()
    late: list[HostEvent] = []

    def subscribe_late(event: HostEvent) -> None:
        if not late and isinstance(event, ConnectorExited):
            bus.subscribe(late.append)

    bus.subscribe(subscribe_late)
    bus.emit(EXITED)
    registered = ChannelsRegistered("s1", ())
    bus.emit(registered)
    assert late == [registered]


async def test_the_boards_listener_hears_an_incoming_batch_once_after_the_host_followed_it(
    tmp_path: Path,
) -> None:
    """The host's own parts come first: the default channel has already moved."""
    fake = FakeConnector()
    recorder = Recorder()
    seen_default: list[ChannelRef | None] = []
    async with board_of(tmp_path, {"s1": fake}, recorder=recorder) as board:

        def watch(event: HostEvent) -> None:
            if isinstance(event, MessagesAccepted):
                seen_default.append(board.default_channel.ref)

        board.events.subscribe(watch)
        await fake.call("channels/register", {"channels": [descriptor("a"), descriptor("b")]})
        batch = {"messages": [message("a", "m1"), message("b", "m2")]}
        await fake.call("channels/incoming", batch)
    (accepted,) = recorder.of(MessagesAccepted)
    assert accepted.server_id == "s1"
    assert [m["messageId"] for m in accepted.messages] == ["m1", "m2"]
    assert seen_default == [ChannelRef("s1", "b")]
    registered = recorder.of(ChannelsRegistered)
    assert [e.channel_ids for e in registered] == [("a", "b")]


async def test_a_failing_listener_does_not_disturb_the_host(tmp_path: Path, logs: Logs) -> None:
    fake = FakeConnector()
    async with board_of(tmp_path, {"s1": fake}) as board:

        def broken(event: HostEvent) -> None:
            raise RuntimeError("listener bug")

        board.events.subscribe(broken)
        await fake.call("channels/register", {"channels": [descriptor("a")]})
        answer = await fake.call("channels/incoming", {"messages": [message("a", "m1")]})
        default = board.default_channel.ref
        stored = await board.store.count()
    assert answer == {"results": [{"messageId": "m1", "accepted": True}]}
    assert default == ChannelRef("s1", "a")
    assert stored == 1
    failed = [e["event_type"] for e in logs if e["event"] == "host_event_listener_failed"]
    assert {"ChannelsRegistered", "MessagesAccepted"} <= set(failed)


async def test_an_incoming_batch_is_one_log_line_however_many_messages_it_holds(
    tmp_path: Path, logs: Logs
) -> None:
    fake = FakeConnector()
    async with board_of(tmp_path, {"s1": fake}):
        await fake.call("channels/register", {"channels": [descriptor("a")]})
        batch = {"messages": [message("a", f"m{i}") for i in range(5)]}
        await fake.call("channels/incoming", batch)
    (line,) = [e for e in logs if e["event"] == "messages_accepted"]
    assert (line["server_id"], line["count"], line["log_level"]) == ("s1", 5, "debug")


def test_a_batch_event_names_each_of_its_channels_once_given_or_worked_out() -> None:
    batch = [
        {"channelId": "a", "messageId": "1"},
        {"channelId": "b", "messageId": "2"},
        {"channelId": "a", "messageId": "3"},
    ]
    assert sorted(MessagesAccepted("s", batch).channels) == ["a", "b"]
    assert sorted(MessagesAccepted("s", batch, ["b", "a"]).channels) == ["a", "b"]
