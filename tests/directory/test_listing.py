"""Listing, search, pagination, busy/online, TTL pruning and durability of the directory."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from switchboard.directory import (
    Directory,
    DirectoryUnavailable,
    InvalidArgument,
    InvalidName,
    NotFound,
)

from .conftest import FakeClock


def _fill(directory: Directory) -> None:
    directory.register("@alice", tags=["resident"], description="lives here", holder="@alice")
    directory.register("@bob", tags=["worker", "resident"], ttl=60)
    directory.register("weather", capability="forecasts", tags=["public"])
    directory.register("research:summarize", holder="@alice", description="Summaries")


def test_list_filters_by_prefix_tag_kind_and_owner_and_orders_by_address(
    directory: Directory,
) -> None:
    _fill(directory)
    assert [e.address for e in directory.list(prefix="@").entries] == ["@alice", "@bob"]
    assert [e.address for e in directory.list(tag="resident").entries] == ["@alice", "@bob"]
    assert [e.address for e in directory.list(kind="service").entries] == [
        "research:summarize",
        "weather",
    ]
    assert [e.address for e in directory.list(owner="@alice").entries] == [
        "@alice",
        "research:summarize",
    ]
    assert directory.list(prefix="@", tag="worker").total == 1


def test_search_matches_a_substring_of_address_capability_description_or_tag_in_any_case(
    directory: Directory,
) -> None:
    _fill(directory)
    assert [e.address for e in directory.search("SUMMAR").entries] == ["research:summarize"]
    assert [e.address for e in directory.search("forecast").entries] == ["weather"]
    assert [e.address for e in directory.search("work").entries] == ["@bob"]
    assert directory.search("nothing-like-this").total == 0


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 30), st.integers(1, 7))
def test_pages_of_any_size_cover_every_entry_once_in_order_with_the_same_total(
    count: int, limit: int
) -> None:
    import tempfile

    with (
        tempfile.TemporaryDirectory() as tmp,
        Directory.open(Path(tmp) / "s.sqlite", clock=FakeClock()) as directory,
    ):
        for i in range(count):
            directory.register(f"@agent-{i:02d}")
        seen: list[str] = []
        offset = 0
        while True:
            page = directory.list(limit=limit, offset=offset)
            assert page.total == count
            if not page.entries:
                break
            seen += [e.address for e in page.entries]
            offset += limit
        assert seen == sorted(f"@agent-{i:02d}" for i in range(count))


def test_out_of_range_limits_and_offsets_are_refused(directory: Directory) -> None:
    for limit, offset in ((0, 0), (501, 0), (10, -1)):
        with pytest.raises(InvalidArgument):
            directory.list(limit=limit, offset=offset)


def test_prune_removes_stale_agents_by_ttl_and_never_services(
    directory: Directory, clock: FakeClock
) -> None:
    directory.register("@short", ttl=10)
    directory.register("@long", ttl=100)
    directory.register("@forever")
    directory.register("weather")
    assert directory.lookup("@short").expires_at == clock.now + 10
    assert directory.lookup("weather").expires_at is None
    clock.advance(10)
    assert [e.address for e in directory.prune()] == ["@short"]
    clock.advance(1000)
    pruned = directory.prune(default_ttl=500)
    assert [e.address for e in pruned] == ["@forever", "@long"]
    assert [e.address for e in directory.list().entries] == ["weather"]


def test_touching_an_agent_pushes_its_expiry_back(directory: Directory, clock: FakeClock) -> None:
    directory.register("@alive", ttl=10)
    clock.advance(9)
    directory.touch("@alive")
    clock.advance(9)
    assert directory.prune() == []
    assert directory.lookup("@alive").expires_at == clock.now + 1


def test_a_ttl_on_a_service_is_refused_because_services_are_never_pruned(
    directory: Directory,
) -> None:
    with pytest.raises(InvalidArgument, match="never pruned"):
        directory.register("weather", ttl=5)


def test_busy_idle_online_offline_and_retag_are_recorded(directory: Directory) -> None:
    directory.register("@w")
    assert not directory.lookup("@w").online
    assert directory.set_online("@w", True).online
    assert directory.set_busy("@w", True).busy
    assert not directory.set_busy("@w", False).busy
    assert directory.retag("@w", ["a", "b", "a"]).tags == ("a", "b")


def test_unknown_and_malformed_addresses_get_distinct_errors(directory: Directory) -> None:
    with pytest.raises(NotFound, match="switchboard agents list"):
        directory.lookup("@nobody")
    with pytest.raises(InvalidName):
        directory.lookup("@Nobody")


def test_entries_survive_closing_and_reopening_the_file_and_share_it_with_other_tables(
    tmp_path: Path,
) -> None:
    path = tmp_path / "store.sqlite"
    with Directory.open(path, clock=FakeClock()) as directory:
        directory.claim("@kept", token="t", tags=["x"])
    with Directory.open(path, clock=FakeClock()) as directory:
        assert directory.lookup("@kept").tags == ("x",)
        assert directory.claim("@kept", token="t").outcome == "refreshed"


def test_a_file_that_is_not_a_database_is_refused_as_unavailable(tmp_path: Path) -> None:
    path = tmp_path / "junk.sqlite"
    path.write_bytes(b"this is not sqlite" * 100)
    with pytest.raises(DirectoryUnavailable, match="cannot open directory database"):
        Directory.open(path)
