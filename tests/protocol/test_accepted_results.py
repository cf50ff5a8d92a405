"""``accepted_results`` writes an all-accepted answer once (issue #14): when it writes it, it
reads back as one ``{key: id, "accepted": true}`` per id, in order; when it declines, an id
holds something the cut at element boundaries cannot take."""

from __future__ import annotations

import orjson
from hypothesis import given, settings
from hypothesis import strategies as st

from switchboard.protocol import accepted_results

__all__: list[str] = []

# Ids with quotes, commas, backslashes, the three characters '","', controls, non-ASCII and
# the surrogate range (which orjson refuses to write).
awkward_ids = st.lists(
    st.text(
        alphabet=st.sampled_from(['"', ",", "\\", "a", "b", "\n", "é", "💬", "\ud800"]),
        max_size=6,
    ),
    max_size=8,
)


@settings(max_examples=500, deadline=None)
@given(ids=awkward_ids, key=st.sampled_from(["id", "messageId"]))
def test_written_results_read_back_as_one_accepted_object_per_id_in_order(
    ids: list[str], key: str
) -> None:
    written = accepted_results(ids, key)
    if written is None:
        assert not ids or any(
            "," in i or '"' in i or "\\" in i or "\n" in i or "\ud800" in i for i in ids
        )
        return
    assert orjson.loads(orjson.dumps({"results": written})) == {
        "results": [{key: i, "accepted": True} for i in ids]
    }


def test_plain_ids_are_written_and_an_empty_batch_is_left_to_the_caller() -> None:
    assert accepted_results([], "messageId") is None
    written = accepted_results(["m1", "caf\xe9", ""], "messageId")
    assert written is not None
    assert orjson.dumps(written) == (
        b'[{"messageId":"m1","accepted":true},{"messageId":"caf\xc3\xa9","accepted":true},'
        b'{"messageId":"","accepted":true}]'
    )
