"""A ``channels/register`` through the C-built fast path answers exactly as validating each
descriptor with the model and authorizing it alone would (issue #14, item 4)."""

from __future__ import annotations

import gc
from fnmatch import fnmatchcase
from typing import Any

import anyio
import orjson
from hypothesis import given, settings
from hypothesis import strategies as st

from switchboard.channels import ChannelRef, ChannelRegistry
from switchboard.connections.limits import RegistrationLimits
from switchboard.connections.registration import RegistrationHandler
from switchboard.events import ChannelsRegistered, EventBus, HostEvent
from switchboard.protocol import (
    ChannelDescriptor,
    DescriptorProblem,
    FastDescriptor,
    fast_descriptors,
    validate_descriptors,
)

scalars = st.one_of(st.none(), st.booleans(), st.integers(), st.text(max_size=3), st.floats())
objects = st.dictionaries(st.text(max_size=3), scalars, max_size=2)
ids = st.sampled_from(["a", "b", "x1", "x2", "", "#c (S)"])
items = st.one_of(
    st.fixed_dictionaries(
        {
            "id": ids,
            "type": st.just("t"),
            "label": st.sampled_from(["#General", "c (Server)", "", "dm"]),
            "direction": st.sampled_from(["inbound", "outbound", "bidirectional"]),
        },
        optional={
            "address": st.one_of(objects, scalars),
            "metadata": st.one_of(objects, st.just({"channelType": "dm"}), scalars),
            "initiallyOpen": scalars,
            "capabilities": st.one_of(objects, scalars),
            "initially_open": st.booleans(),
            "topic": st.text(max_size=2),
        },
    ),
    scalars,
)


def _handler(
    registry: ChannelRegistry, patterns: list[str] | None, events: EventBus | None = None
) -> RegistrationHandler:
    return RegistrationHandler(
        server_id="s",
        registry=registry,
        events=events or EventBus(),
        allows=lambda path: True,
        permits=None
        if patterns is None
        else (lambda cid: any(fnmatchcase(cid, p) for p in patterns)),
        limits=RegistrationLimits(10_000, None),
    )


def _results(answer: dict[str, Any]) -> list[dict[str, Any]]:
    """The answer's results as the connector reads them (the handler may hand the transport
    results already written as JSON)."""
    results: list[dict[str, Any]] = orjson.loads(orjson.dumps(answer))["results"]
    return results


def _model(item: Any) -> ChannelDescriptor | None:
    try:
        return ChannelDescriptor.model_validate(item)
    except Exception:
        return None


@settings(max_examples=200, deadline=None)
@given(
    batch=st.lists(items, max_size=8),
    patterns=st.one_of(st.none(), st.just(["x*", "a"])),
)
def test_each_descriptor_is_checked_and_authorized_alone_as_the_model_would(
    batch: list[Any], patterns: list[str] | None
) -> None:
    registry = ChannelRegistry()
    answer = anyio.run(_handler(registry, patterns).register, {"channels": batch})
    results = _results(answer)
    assert len(results) == len(batch)
    for item, result in zip(batch, results, strict=True):
        model = _model(item)
        if model is None:
            (problem,) = validate_descriptors([item])
            assert isinstance(problem, DescriptorProblem)
            assert result == {"id": problem.id or "", "accepted": False, "reason": problem.reason}
            continue
        assert result["id"] == model.id
        permitted = patterns is None or any(fnmatchcase(model.id, p) for p in patterns)
        assert result["accepted"] is permitted
        assert ("reason" in result) is not permitted
    for entry in registry.entries():
        # the last accepted item of each id is what the registry holds, with the model's values
        last = [m for m in map(_model, batch) if m is not None and m.id == entry.ref.channel_id][-1]
        for name in ChannelDescriptor.model_fields:
            assert getattr(entry.descriptor, name) == getattr(last, name), name
        assert entry.descriptor.model_dump(by_alias=True, exclude_none=True) == last.model_dump(  # type: ignore[attr-defined]
            by_alias=True, exclude_none=True
        )


def _plain(n: int) -> dict[str, Any]:
    return {"id": f"bench:c{n}", "type": "bench", "label": f"#c{n}", "direction": "inbound"}


def test_a_large_common_batch_is_registered_without_objects_for_the_collector_to_walk() -> None:
    registry = ChannelRegistry()
    seen: list[HostEvent] = []
    events = EventBus()
    events.subscribe(seen.append)
    batch = [_plain(n) for n in range(2000)]
    answer = anyio.run(_handler(registry, None, events).register, {"channels": batch})
    assert _results(answer) == [{"id": d["id"], "accepted": True} for d in batch]
    assert seen == [ChannelsRegistered("s", tuple(d["id"] for d in batch))]
    entries = list(registry.entries())
    assert len(entries) == 2000
    assert all(isinstance(e.descriptor, FastDescriptor) for e in entries)
    assert not any(gc.is_tracked(e) or gc.is_tracked(e.descriptor) for e in entries)
    # Nor a tracked ChannelRef per channel: an entry makes its ref when first asked.
    assert not any(e.made_ref for e in entries)
    assert entries[5].ref == ChannelRef("s", "bench:c5")
    assert entries[5].ref is entries[5].ref
    assert registry.by_label("C7")[0].ref == ChannelRef("s", "bench:c7")
    assert registry.by_id("bench:c1999")[0].registration == entries[-1].registration


def test_one_odd_item_leaves_the_rest_of_the_batch_on_the_fast_path() -> None:
    registry = ChannelRegistry()
    batch = [_plain(n) for n in range(10)]
    batch[3] = {**batch[3], "topic": "kept"}  # an extra member: the model keeps it
    batch[5] = {**batch[5], "direction": "sideways"}
    answer = anyio.run(_handler(registry, None).register, {"channels": batch})
    results = _results(answer)
    assert [r["accepted"] for r in results] == [True] * 5 + [False] + [True] * 4
    assert "direction" in results[5]["reason"]
    _fast, odd = fast_descriptors(batch)
    assert odd == [3, 5]
    listed = anyio.run(_handler(registry, None).list, {})["channels"]
    assert listed[3] == batch[3]
    assert listed[:3] == batch[:3]


def test_params_in_another_shape_are_still_read_by_the_model() -> None:
    registry = ChannelRegistry()
    answer = anyio.run(_handler(registry, None).register, {"channels": (_plain(1),), "extra": 1})
    assert _results(answer) == [{"id": "bench:c1", "accepted": True}]


# Ids with quotes, backslashes, the three characters '","', controls, non-ASCII, and the
# surrogate range (which orjson refuses to write).
awkward_ids = st.lists(
    st.text(
        alphabet=st.sampled_from(['"', ",", "\\", "a", "\n", "\x00", "é", "💬", "\ud800"]),
        min_size=1,
        max_size=6,
    ),
    min_size=1,
    max_size=6,
    unique=True,
)


@settings(max_examples=300, deadline=None)
@given(channel_ids=awkward_ids)
def test_an_all_accepted_answer_reads_back_as_one_result_per_id_whatever_the_ids_hold(
    channel_ids: list[str],
) -> None:
    batch = [{**_plain(0), "id": channel_id} for channel_id in channel_ids]
    answer = anyio.run(_handler(ChannelRegistry(), None).register, {"channels": batch})
    try:
        results = _results(answer)
    except orjson.JSONEncodeError:  # a lone surrogate: no JSON encoder writes it
        assert any("\ud800" in channel_id for channel_id in channel_ids)
        return
    assert results == [{"id": channel_id, "accepted": True} for channel_id in channel_ids]
