"""The bulk registration path stores exactly what storing the descriptors one by one would."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from switchboard.channels import ChannelRegistry, CheckedDescriptors, ItemResult, Rejected
from switchboard.channels.index import ChannelIndex
from switchboard.channels.records import INVALID_ID

from .channels_support import Desc, desc

ids = st.sampled_from(["a", "b", "c", "Dev", "x:y", "#a"])
labels = st.sampled_from(
    ["", "#", "#General", "general", "general (Acme)", "#dev  (Acme)", "a (b (c))", "DM: Bo"]
)
raws = st.one_of(st.none(), st.sampled_from(["1", "2", ""]), st.integers(0, 2))
descriptors = st.builds(
    lambda i, label, raw, dm: desc(i, label, raw=raw, dm_name=dm, dm_id=dm and 7),
    ids,
    labels,
    raws,
    st.one_of(st.none(), st.sampled_from(["bo", "@Bo"])),
)
batches = st.lists(st.tuples(st.sampled_from(["s1", "s2", "s"]), st.lists(descriptors, max_size=5)))


def _state(index: ChannelIndex) -> object:
    """Everything the index answers, keyed by what it was asked."""
    entries = [(e.ref, e.registration, e.raw_id, e.descriptor) for e in index]
    keys = {e.ref.channel_id for e in index} | {e.raw_id or "" for e in index}
    labels_asked = {e.descriptor.label for e in index} | {"general", "dev", "a", "bo", "@bo"}
    return (
        entries,
        index.statistics(),
        {k: [e.ref for e in index.by_id(k)] for k in keys},
        {k: [e.ref for e in index.by_raw_id(k)] for k in keys},
        {k: index.label_hits(k)[0] for k in labels_asked if k},
        {k: [e.ref for e in index.by_label(k)] for k in labels_asked if k},
        {k: [e.ref for e in index.by_dm_name(k)] for k in ("bo", "@bo", "<@7>")},
        sorted(index.label_keys()),
    )


@settings(max_examples=200)
@given(batches)
def test_registering_in_bulk_leaves_the_indexes_as_one_by_one_would(
    batches: list[tuple[str, list[Desc]]],
) -> None:
    bulk, each = ChannelIndex(), ChannelIndex()
    serial = 1
    for server_id, batch in batches:
        bulk.register_many(server_id, batch, serial)
        each._register_each(server_id, batch, serial)
        serial += len(batch)
        assert _state(bulk) == _state(each)


steps = st.lists(
    st.tuples(
        st.sampled_from(["s1", "s2", "s"]),
        st.lists(descriptors, max_size=5),
        st.booleans(),
        st.lists(ids, max_size=2),
        st.sampled_from([None, "s1", "s2", "s"]),
    )
)


@settings(max_examples=300)
@given(steps)
def test_a_batch_vouched_for_as_checked_registers_exactly_as_the_same_list_does(
    steps: list[tuple[str, list[Desc], bool, list[str], str | None]],
) -> None:
    # The host vouches for a batch whose every item took the common shape (non-empty str ids,
    # str labels): the registry skips its own pass over their types and indexes their labels
    # when first needed (issue #14). Vouched and plain batches mix, with removals between,
    # and whole servers dropped (in bulk; a vouched batch's labels may not be indexed yet).
    vouched, plain = ChannelRegistry(), ChannelRegistry()
    for server_id, batch, vouch, removed, dropped in steps:
        a = vouched.register(server_id, CheckedDescriptors(batch) if vouch else list(batch))
        b = plain.register(server_id, list(batch))
        assert (tuple(a.results), a.added_ids) == (tuple(b.results), b.added_ids)
        a = vouched.change(server_id, removed=removed)
        b = plain.change(server_id, removed=removed)
        assert (tuple(a.results), a.added_ids) == (tuple(b.results), b.added_ids)
        if dropped is not None:
            assert vouched.remove_server(dropped) == plain.remove_server(dropped)
    assert _state(vouched._index) == _state(plain._index)
    assert vouched.labels_waiting == 0


def test_a_vouched_batch_s_labels_wait_until_first_needed_and_are_then_found() -> None:
    registry = ChannelRegistry()
    registry.register("s", CheckedDescriptors([desc(f"c{i}", f"#C{i}") for i in range(300)]))
    assert registry.labels_waiting == 300
    registry.change("s", removed=["c1"])  # a removal reads the label index: it is made first
    assert registry.labels_waiting == 0
    assert registry.by_label("c1") == ()
    assert [e.ref.channel_id for e in registry.by_label("#c7")] == ["c7"]


def test_labels_that_wait_keep_their_place_ahead_of_later_ones_under_the_same_key() -> None:
    registry = ChannelRegistry()
    registry.register("s1", CheckedDescriptors([desc("a", "#General")]))
    registry.register("s2", [desc("b", "general")])
    assert [e.ref.server_id for e in registry.by_label("general")] == ["s1", "s2"]
    registry.register("s3", CheckedDescriptors([desc("c", "General")]))
    registry.index_labels()
    assert registry.labels_waiting == 0
    assert [e.ref.server_id for e in registry.by_label("general")] == ["s1", "s2", "s3"]


def test_a_first_registration_of_distinct_ids_answers_every_item_in_order() -> None:
    registry = ChannelRegistry()
    change = registry.register("s", [desc(f"c{i}", f"#C{i}") for i in range(300)])
    assert change.results == tuple(ItemResult(f"c{i}", True) for i in range(300))
    assert [r.channel_id for r in change.added] == [f"c{i}" for i in range(300)]
    assert registry.resolve("c7").descriptor.label == "#C7"
    assert [e.ref.channel_id for e in registry.by_label("c7")] == ["c7"]


def test_an_id_twice_in_one_batch_is_registered_once_with_the_later_descriptor() -> None:
    registry = ChannelRegistry()
    change = registry.register("s", [desc("a", "one"), desc("b"), desc("a", "two")])
    assert change.results == (ItemResult("a", True), ItemResult("b", True), ItemResult("a", True))
    assert [r.channel_id for r in change.added] == ["a", "b"]
    assert registry.resolve("a").descriptor.label == "two"
    assert registry.by_label("one") == ()


def test_a_batch_authorizer_decides_only_the_valid_items_in_order() -> None:
    seen: list[list[str]] = []

    def batch(descriptors: object) -> list[str | None]:
        names = [d.id for d in descriptors]  # type: ignore[attr-defined]
        seen.append(names)
        return ["no" if n == "b" else None for n in names]

    registry = ChannelRegistry()
    change = registry.register(
        "s",
        [desc("a"), Rejected(None, "malformed"), desc(""), desc("b"), desc("c")],
        authorize_batch=batch,
    )
    assert seen == [["a", "b", "c"]]
    assert change.results == (
        ItemResult("a", True),
        ItemResult("", False, "malformed"),
        ItemResult("", False, INVALID_ID),
        ItemResult("b", False, "no"),
        ItemResult("c", True),
    )
    assert [r.channel_id for r in change.added] == ["a", "c"]
