"""The rate-limited log: the first occurrence in full, then counted summaries (issue #10, 4)."""

from __future__ import annotations

from typing import Any

import pytest

from switchboard.runtime.ratelog import RateLimitedLog


class _Lines:
    """A logger that keeps (level, event, fields) for each line."""

    def __init__(self) -> None:
        self.lines: list[tuple[str, str, dict[str, Any]]] = []

    def __getattr__(self, level: str) -> Any:
        def write(event: str, **fields: Any) -> None:
            self.lines.append((level, event, fields))

        return write


class _Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_the_first_occurrence_is_logged_in_full_and_repeats_within_the_interval_are_counted() -> (
    None
):
    lines, clock = _Lines(), _Clock()
    log = RateLimitedLog(lines, interval=60, clock=clock)
    assert log.note("junk", "junk_line_skipped", detail="banner") is True
    for _ in range(4):
        clock.now += 1
        assert log.note("junk", "junk_line_skipped", detail="banner") is False
    assert lines.lines == [
        ("warning", "junk_line_skipped", {"count": 1, "total": 1, "detail": "banner"})
    ]
    assert log.totals() == {"junk": 5}


def test_after_the_interval_one_summary_carries_the_count_since_the_last_line() -> None:
    lines, clock = _Lines(), _Clock()
    log = RateLimitedLog(lines, interval=60, clock=clock)
    log.note("k", "refused", level="info", reason="a")
    clock.now = 30
    log.note("k", "refused", level="info", reason="b")
    clock.now = 61
    assert log.note("k", "refused", level="info", reason="c") is True
    assert lines.lines[-1] == (
        "info",
        "refused",
        {"count": 2, "total": 3, "repeated": True, "reason": "c"},
    )


def test_each_key_is_its_own_series() -> None:
    lines, clock = _Lines(), _Clock()
    log = RateLimitedLog(lines, interval=60, clock=clock)
    log.note("a", "e")
    log.note("b", "e")
    log.note("a", "e", count=3)
    assert len(lines.lines) == 2
    assert log.totals() == {"a": 4, "b": 1}


def test_flush_writes_only_the_summaries_still_owed() -> None:
    lines, clock = _Lines(), _Clock()
    log = RateLimitedLog(lines, interval=60, clock=clock)
    log.note("a", "e")
    log.note("a", "e")
    log.note("b", "e")
    log.flush()
    assert [(f["count"], f["total"]) for _, _, f in lines.lines] == [(1, 1), (1, 1), (1, 2)]
    log.flush()
    assert len(lines.lines) == 3


def test_a_negative_interval_is_refused() -> None:
    with pytest.raises(ValueError, match="interval"):
        RateLimitedLog(_Lines(), interval=-1)


def test_a_junk_line_flood_from_a_peer_is_one_line_until_the_peer_stops() -> None:
    """A flood is one line, then one summary when the log is flushed."""
    lines, clock = _Lines(), _Clock()
    log = RateLimitedLog(lines, interval=60, clock=clock)
    for _ in range(1000):
        log.note("junk_line_skipped", "junk_line_skipped", detail="x")
    log.flush()
    assert [f["count"] for _, _, f in lines.lines] == [1, 999]


def test_summed_fields_add_up_over_the_occurrences_a_summary_covers() -> None:
    lines, clock = _Lines(), _Clock()
    log = RateLimitedLog(lines, interval=60, clock=clock)
    for n in range(1, 5):
        log.note("c", "channels_changed", level="info", summed=("added",), added=n, removed=0)
    clock.now = 61
    log.note("c", "channels_changed", level="info", summed=("added",), added=10, removed=0)
    assert lines.lines == [
        ("info", "channels_changed", {"count": 1, "total": 1, "added": 1, "removed": 0}),
        (
            "info",
            "channels_changed",
            {"count": 4, "total": 5, "repeated": True, "added": 2 + 3 + 4 + 10, "removed": 0},
        ),
    ]
    assert (log.noted, log.lines) == (5, 2)


def test_a_restart_writes_what_is_owed_then_tells_the_next_connection_in_full() -> None:
    lines, clock = _Lines(), _Clock()
    log = RateLimitedLog(lines, interval=60, clock=clock)
    log.note("k", "connector_log", level="info")
    log.note("k", "connector_log", level="info")
    log.restart()  # the connection ended: its owed summary is written
    log.note("k", "connector_log", level="info")  # a new connection: in full again
    assert [fields for _, _, fields in lines.lines] == [
        {"count": 1, "total": 1},
        {"count": 1, "total": 2, "repeated": True},
        {"count": 1, "total": 1},
    ]
    assert log.totals() == {"k": 3}  # counting goes on across connections
    assert (log.noted, log.lines) == (3, 3)
