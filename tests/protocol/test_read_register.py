"""``channels/register`` params read straight from their bytes agree with the dict path.

Issue #14, item 4: :func:`read_register_params` decodes a request's descriptors into
:class:`FastDescriptor` values without building a dict per descriptor first. It must give
exactly what :func:`fast_descriptors` gives for the same JSON read as dicts, and decline (None,
so the frame is read the general way) whenever any item would be left to the model.
"""

from __future__ import annotations

from typing import Any

import orjson
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from switchboard.protocol import fast_descriptors, read_register_params
from tests.connections.test_register_fastpath import items


def _encode(value: Any) -> bytes:
    try:
        return orjson.dumps(value)
    except TypeError:  # a lone surrogate orjson cannot write
        assume(False)
        raise


@settings(max_examples=300, deadline=None)
@given(batch=st.lists(items, max_size=6))
def test_the_bytes_reader_accepts_a_batch_exactly_when_every_item_has_the_fast_shape(
    batch: list[Any],
) -> None:
    raw = _encode({"channels": batch})
    as_dicts = orjson.loads(raw)["channels"]
    fast, odd = fast_descriptors(as_dicts)
    read = read_register_params(raw)
    if odd:
        assert read is None
    else:
        assert read is not None
        assert read["channels"] == fast


def test_a_batch_with_one_extra_member_is_left_to_the_general_path() -> None:
    good = {"id": "a", "type": "t", "label": "#a", "direction": "inbound"}
    raw = orjson.dumps({"channels": [good, {**good, "id": "b", "topic": "x"}]})
    assert read_register_params(raw) is None


def test_the_descriptors_read_from_bytes_are_handed_back_unchanged() -> None:
    raw = orjson.dumps(
        {"channels": [{"id": "a", "type": "t", "label": "#a", "direction": "outbound"}]}
    )
    read = read_register_params(raw)
    assert read is not None
    fast, odd = fast_descriptors(read["channels"])
    assert odd == []
    assert fast[0] is read["channels"][0]
    assert fast[0].model_dump() == {"id": "a", "type": "t", "label": "#a", "direction": "outbound"}
