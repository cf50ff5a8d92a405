"""The composition root: every host part is handed what it uses when it is built.

The board's parts must not reach back into the board: no part holds a late-bound lambda, the
board itself, or one of the board's methods. The walk below follows every attribute (and
``__slots__`` entry, list, tuple and dict) of every host object reachable from a board. It
stops at a connector session: one connection's own object, whose insides are wired by the
session itself when the connection is made, not by the composition root.
"""

from __future__ import annotations

import types
from pathlib import Path

import pytest

from switchboard.app.board import Switchboard
from switchboard.channels import ChannelRef
from switchboard.config import Config, ConnectorConfig, StoreConfig
from switchboard.connections.session import ConnectorSession
from switchboard.lifecycle.rules.decisions import TuneOutScope
from switchboard.store.sqlite import MessageStore
from switchboard.tuneouts.rules.epochs import TuneOutTerms
from tests.fake import FakeConnector, board_with_log, register_admitted
from tests.helpers import Recorder

pytestmark = pytest.mark.anyio


HOST_PACKAGES = tuple(
    f"switchboard.{p}."
    for p in ("app", "agents", "connections", "lifecycle", "tuneouts", "events", "status")
)
"""The packages whose parts the walk follows into (the host's own parts)."""


def _attributes(obj: object) -> dict[str, object]:
    found: dict[str, object] = dict(vars(obj)) if hasattr(obj, "__dict__") else {}
    for cls in type(obj).__mro__:
        for slot in getattr(cls, "__slots__", ()):
            if hasattr(obj, slot):
                found[slot] = getattr(obj, slot)
    return found


def reach_backs(board: Switchboard) -> list[str]:
    """Where a part reachable from ``board`` holds a lambda, the board, or a board method."""
    problems: list[str] = []
    seen: set[int] = set()
    stack: list[tuple[str, object]] = [
        (f"board.{name}", value) for name, value in _attributes(board).items()
    ]
    while stack:
        path, obj = stack.pop()
        if id(obj) in seen:
            continue
        seen.add(id(obj))
        if obj is board:
            problems.append(f"{path} is the board")
        elif isinstance(obj, ConnectorSession):
            continue
        elif isinstance(obj, types.FunctionType):
            if obj.__name__ == "<lambda>":
                problems.append(f"{path} is a lambda")
        elif isinstance(obj, types.MethodType):
            if obj.__self__ is board:
                problems.append(f"{path} is the board's {obj.__name__}")
            stack.append((f"{path}.__self__", obj.__self__))
        elif isinstance(obj, dict):
            stack.extend((f"{path}[{key!r}]", value) for key, value in obj.items())
        elif isinstance(obj, list | tuple | set | frozenset):
            stack.extend((f"{path}[{i}]", value) for i, value in enumerate(obj))
        elif type(obj).__module__.startswith(HOST_PACKAGES):
            stack.extend((f"{path}.{name}", value) for name, value in _attributes(obj).items())
    return problems


async def test_a_board_built_without_a_decision_log_wires_no_part_back_to_itself(
    tmp_path: Path,
) -> None:
    path = tmp_path / "host.sqlite"
    store = await MessageStore.open(path)
    try:
        config = Config(
            connectors=[ConnectorConfig(id="s1", command=["unused"])],
            store=StoreConfig(path=str(path)),
        )
        board = Switchboard(config, store, listener=Recorder())
        assert reach_backs(board) == []
    finally:
        await store.aclose()


async def test_a_serving_board_with_a_tune_out_wires_no_part_back_to_itself(
    tmp_path: Path,
) -> None:
    async with board_with_log(tmp_path, fake := FakeConnector()) as board:
        await register_admitted(board, fake, "room")
        await board.tuneouts.start("a", TuneOutScope(ChannelRef("s1", "room")), TuneOutTerms())
        assert reach_backs(board) == []
