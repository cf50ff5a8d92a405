"""The partial DM-name finder agrees with a scan, before and after it is built and kept up."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from switchboard.channels.dm_index import MAX_PARTIAL_LENGTH, MIN_PARTIAL, DmIndex
from switchboard.channels.records import ChannelEntry
from tests.channels.channels_support import desc


def dm_entry(channel_id: str, name: str) -> ChannelEntry:
    return ChannelEntry("s", channel_id, desc(channel_id, dm_name=name), False, 0, None)


def add(index: DmIndex, entry: ChannelEntry) -> None:
    metadata = entry.descriptor.metadata
    assert metadata is not None
    index.add(entry, entry.descriptor.label, metadata)


def remove(index: DmIndex, entry: ChannelEntry) -> None:
    index.discard(entry, entry.descriptor.label, entry.descriptor.metadata)


def scan(names: set[str], key: str) -> set[str]:
    def fits(n: str) -> bool:
        if len(n) < MIN_PARTIAL:
            return False
        inside = n.startswith(key) if len(n) > MAX_PARTIAL_LENGTH else key in n
        return inside or key.startswith(n)

    return {n for n in names if fits(n)}


names = st.text(alphabet="abn_", min_size=1, max_size=7)
steps = st.lists(
    st.one_of(
        st.tuples(st.just("add"), st.lists(names, min_size=1, max_size=80)),
        st.tuples(st.just("remove"), st.lists(names, min_size=1, max_size=80)),
        st.tuples(st.just("query"), st.lists(names, min_size=1, max_size=3)),
    ),
    max_size=8,
)


@settings(max_examples=150, deadline=None)
@given(steps)
def test_partial_matches_equal_a_scan_through_any_sequence_of_changes(
    sequence: list[tuple[str, list[str]]],
) -> None:
    index = DmIndex()
    live: dict[str, ChannelEntry] = {}
    for kind, words in sequence:
        for word in words:
            if kind == "add" and word not in live:
                live[word] = dm_entry(f"dm-{word}", word)
                add(index, live[word])
            elif kind == "remove" and word in live:
                remove(index, live.pop(word))
            elif kind == "query":
                expected = scan(set(live), word)
                assert set(index.partial(word, limit=10_000)) == expected, word


def test_a_query_reads_only_up_to_its_limit_and_reports_more() -> None:
    index = DmIndex()
    for i in range(300):
        add(index, dm_entry(f"d{i}", f"member{i:03}"))
    found = index.partial("member", limit=6)
    assert len(found) == 7  # one more than the limit says "and more"
    assert set(index.partial("ember29", limit=20)) == {f"member29{i}" for i in range(10)}


def test_a_long_name_matches_by_its_start_or_as_the_start_of_the_query() -> None:
    index = DmIndex()
    long_name = "x" * MAX_PARTIAL_LENGTH + "tail"
    add(index, dm_entry("long", long_name))
    assert index.partial("xxx", limit=5) == (long_name,)
    assert index.partial("tail", limit=5) == ()
    assert index.partial(long_name + "!", limit=5) == (long_name,)


def test_an_empty_query_matches_nothing() -> None:
    index = DmIndex()
    add(index, dm_entry("d", "annabel"))
    assert index.partial("", limit=5) == ()
