"""A registration decided in one batch answers as deciding each descriptor in turn would."""

from __future__ import annotations

from fnmatch import fnmatchcase

import anyio
import orjson
from hypothesis import given, settings
from hypothesis import strategies as st

from switchboard.channels import ChannelRegistry
from switchboard.connections.limits import RegistrationLimits
from switchboard.connections.registration import RegistrationHandler
from switchboard.events import EventBus


@given(
    max_channels=st.integers(1, 8),
    registered=st.integers(0, 10),
    per_second=st.one_of(st.none(), st.floats(1, 10)),
    admitted_before=st.integers(0, 5),
    n=st.integers(0, 12),
)
def test_admitting_many_at_once_is_admitting_each_in_turn(
    max_channels: int, registered: int, per_second: float | None, admitted_before: int, n: int
) -> None:
    limits = RegistrationLimits(max_channels, per_second, clock=lambda: 0.0)
    one, many = limits.budget(lambda: registered), limits.budget(lambda: registered)
    for _ in range(admitted_before):
        assert one.admit() == many.admit()
    expected = [one.admit() for _ in range(n)]
    taken, why = many.admit_many(n)
    assert [None] * taken + [why] * (n - taken) == expected
    assert one.finish() == many.finish()


def _reference(
    known: set[str], batch: list[str], room: int, patterns: list[str] | None
) -> list[tuple[str, bool]]:
    """Each descriptor in turn: denied by the patterns, else an update, else a place."""
    out: list[tuple[str, bool]] = []
    for channel_id in batch:
        if patterns is not None and not any(fnmatchcase(channel_id, p) for p in patterns):
            out.append((channel_id, False))
        elif channel_id in known:
            out.append((channel_id, True))
        elif room > 0:
            room -= 1
            out.append((channel_id, True))
        else:
            out.append((channel_id, False))
    return out


channel_ids = st.sampled_from(["a", "b", "c", "d", "e", "x1", "x2"])


@settings(max_examples=150, deadline=None)
@given(
    first=st.lists(channel_ids, max_size=4, unique=True),
    batch=st.lists(channel_ids, max_size=8),
    max_channels=st.integers(1, 8),
    patterns=st.one_of(st.none(), st.just(["x*", "a", "b", "c", "d"])),
)
def test_a_register_is_answered_as_deciding_each_descriptor_in_turn(
    first: list[str], batch: list[str], max_channels: int, patterns: list[str] | None
) -> None:
    registry = ChannelRegistry()
    handler = RegistrationHandler(
        server_id="s",
        registry=registry,
        events=EventBus(),
        allows=lambda path: True,
        permits=None
        if patterns is None
        else (lambda cid: any(fnmatchcase(cid, p) for p in patterns)),
        limits=RegistrationLimits(max_channels, None),
    )

    def wire(channel_id: str) -> dict[str, str]:
        return {"id": channel_id, "type": "t", "label": "#" + channel_id, "direction": "inbound"}

    async def run() -> list[tuple[str, bool]]:
        await handler.register({"channels": [wire(c) for c in first]})
        answer = await handler.register({"channels": [wire(c) for c in batch]})
        results = orjson.loads(orjson.dumps(answer))["results"]  # as the connector reads it
        return [(r["id"], r["accepted"]) for r in results]

    known = {cid for cid, ok in _reference(set(), first, max_channels, patterns) if ok}
    expected = _reference(known, batch, max_channels - len(known), patterns)
    assert anyio.run(run) == expected
