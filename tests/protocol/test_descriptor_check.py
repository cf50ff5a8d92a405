"""The hand-written descriptor check agrees with the ChannelDescriptor model it stands in for."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from switchboard.protocol import ChannelDescriptor, FastDescriptor, fast_descriptors
from switchboard.protocol.descriptor_check import _one_by_one

scalars = st.one_of(st.none(), st.booleans(), st.integers(), st.text(max_size=4), st.floats())
objects = st.dictionaries(st.text(max_size=3), st.one_of(scalars, st.none()), max_size=2)
maybe_text = st.one_of(st.text(max_size=5), scalars)
descriptors = st.fixed_dictionaries(
    {},
    optional={
        "id": maybe_text,
        "type": maybe_text,
        "label": maybe_text,
        "direction": st.one_of(st.sampled_from(["inbound", "outbound", "bidirectional"]), scalars),
        "address": st.one_of(objects, scalars),
        "metadata": st.one_of(objects, scalars),
        "initiallyOpen": scalars,
        "initially_open": scalars,
        "capabilities": st.one_of(objects, scalars),
        "extra": scalars,
    },
)
plain = st.fixed_dictionaries(
    {
        "id": st.text(min_size=1, max_size=5),
        "type": st.text(max_size=3),
        "label": st.text(max_size=5),
        "direction": st.sampled_from(["inbound", "outbound", "bidirectional"]),
    }
)
items = st.one_of(descriptors, plain, scalars)


def _model(item: Any) -> ChannelDescriptor | None:
    try:
        return ChannelDescriptor.model_validate(item)
    except Exception:
        return None


@given(st.lists(items, max_size=6))
def test_the_fast_check_accepts_only_what_the_model_accepts_with_the_same_values(
    batch: list[Any],
) -> None:
    fast, odd = fast_descriptors(batch)
    assert len(fast) == len(batch)
    assert odd == [n for n, d in enumerate(fast) if d is None]
    for item, descriptor in zip(batch, fast, strict=True):
        if descriptor is None:
            continue
        model = _model(item)
        assert model is not None
        for name in ChannelDescriptor.model_fields:
            assert getattr(descriptor, name) == getattr(model, name), name
        assert descriptor.model_dump() == model.model_dump(by_alias=True, exclude_none=True)


@given(st.lists(plain, min_size=1, max_size=6))
def test_a_batch_of_plain_descriptors_all_take_the_fast_path(batch: list[dict[str, Any]]) -> None:
    fast, odd = fast_descriptors(batch)
    assert odd == []
    assert [d.id for d in fast if d is not None] == [item["id"] for item in batch]


@given(st.lists(st.one_of(plain, descriptors), max_size=6))
def test_the_whole_batch_check_and_the_item_by_item_check_agree(batch: list[Any]) -> None:
    assert fast_descriptors(batch) == _one_by_one(batch)


def test_an_item_with_a_member_the_spec_does_not_define_is_left_to_the_model() -> None:
    item = {"id": "a", "type": "t", "label": "l", "direction": "inbound", "topic": "x"}
    fast, odd = fast_descriptors([item])
    assert fast == [None]
    assert odd == [0]


def test_a_fast_descriptor_dumps_only_the_wire_form() -> None:
    item = {"id": "a", "type": "t", "label": "l", "direction": "inbound", "address": None}
    (descriptor,) = fast_descriptors([item])[0]
    assert isinstance(descriptor, FastDescriptor)
    assert descriptor.model_dump() == {"id": "a", "type": "t", "label": "l", "direction": "inbound"}
