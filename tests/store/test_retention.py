"""Retention through the real store on a real SQLite file: what a pass deletes, what it keeps,
that ingest goes on while it runs, and the ``[store]`` settings that configure it."""

from __future__ import annotations

import random
import sqlite3
from collections.abc import MutableMapping
from pathlib import Path
from typing import Any

import anyio
import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from switchboard.config import StoreConfig, parse_duration
from switchboard.store.retention import RetentionPolicy
from switchboard.store.sqlite import MessageStore
from switchboard.store.sqlite.retention import RetentionTask
from tests.store.contract.test_retention import Cursors
from tests.store.storekit import batch_rows, build_wire

pytestmark = pytest.mark.anyio

NOW = 1_800_000_000.0
DAY = 86_400.0


async def fill(
    store: MessageStore, batches: int, *, at: float, per: int = 10, start: int = 0
) -> None:
    """``batches`` batches of ``per`` messages each, received at ``at``.

    Each text carries 48 pseudo-random bytes (as hex), so packed bodies still take room in
    proportion to the messages, as real chat does, and the size cap has something to cut.
    """
    for b in range(batches):
        first = start + b * per
        wire = [
            build_wire(n, content=[{"type": "text", "text": _noise(n)}])
            for n in range(first, first + per)
        ]
        await store.submit_wire("demo", wire, received_at=at)


def _noise(n: int) -> str:
    return f"message {n} " + random.Random(n).randbytes(48).hex()


def policy(**overrides: object) -> RetentionPolicy:
    fields: dict[str, object] = {"keep_newest": 0}
    fields.update(overrides)
    return RetentionPolicy(**fields)  # type: ignore[arg-type]


def seqs_of(db_path: Path) -> list[int]:
    return [first for first, *_ in batch_rows(db_path)]


# -- the age rule --------------------------------------------------------------------------


async def test_old_acknowledged_messages_are_deleted_and_young_ones_kept(
    store: MessageStore, db_path: Path
) -> None:
    await fill(store, 20, at=NOW - 40 * DAY)
    await fill(store, 5, at=NOW - DAY, start=200)
    await store.set_cursor("alice", store.latest_seq)
    task = RetentionTask(store, policy(retain=30 * DAY), Cursors(store, "alice"), clock=lambda: NOW)

    report = await task.run_pass()

    assert (report.rows, report.messages) == (20, 200)
    assert seqs_of(db_path) == [201, 211, 221, 231, 241]
    assert [m.seq for m in await store.read(0, limit=5)] == [201, 202, 203, 204, 205]
    assert await store.count() == 50


async def test_a_message_an_agent_has_not_acknowledged_is_kept_however_old(
    store: MessageStore, db_path: Path
) -> None:
    await fill(store, 10, at=NOW - 90 * DAY)
    await store.set_cursor("alice", 100)
    await store.set_cursor("bob", 35)  # bob still owes an ack for 36..100
    floor = Cursors(store, "alice", "bob")
    task = RetentionTask(store, policy(retain=DAY), floor, clock=lambda: NOW)

    report = await task.run_pass()

    # batch rows 1..10, 11..20, 21..30 are below bob's cursor; 31..40 holds 36, so it stays
    assert seqs_of(db_path) == [31, 41, 51, 61, 71, 81, 91]
    assert (report.floor, report.held_by) == (35, "agent @bob")


async def test_an_agent_that_never_acknowledged_holds_every_message(
    store: MessageStore, db_path: Path
) -> None:
    await fill(store, 5, at=NOW - 90 * DAY)
    await store.set_cursor("alice", store.latest_seq)
    task = RetentionTask(
        store, policy(retain=DAY), Cursors(store, "alice", "carol"), clock=lambda: NOW
    )

    report = await task.run_pass()

    assert report.messages == 0
    assert len(seqs_of(db_path)) == 5


async def test_the_newest_messages_of_the_duplicate_window_are_always_kept(
    store: MessageStore, db_path: Path
) -> None:
    await fill(store, 10, at=NOW - 90 * DAY)
    await store.set_cursor("alice", store.latest_seq)
    task = RetentionTask(
        store, policy(retain=DAY, keep_newest=25), Cursors(store, "alice"), clock=lambda: NOW
    )

    report = await task.run_pass()

    # 100 stored, the newest 25 (76..100) stay: rows up to seq 75 may go, 71..80 may not
    assert seqs_of(db_path) == [71, 81, 91]
    assert report.held_by.startswith("the duplicate window")
    duplicate = await store.submit_wire("demo", [build_wire(99)])
    assert duplicate[0].duplicate


async def test_rows_of_a_kept_server_are_passed_over_and_never_deleted(
    store: MessageStore, db_path: Path
) -> None:
    await fill(store, 3, at=NOW - 90 * DAY)
    await store.submit_wire("@mail", [build_wire(1000)], received_at=NOW - 90 * DAY)
    await fill(store, 3, at=NOW - 90 * DAY, start=300)
    await store.set_cursor("alice", store.latest_seq)
    keep = policy(retain=DAY, keep_servers=frozenset({"@mail"}), chunk_rows=2)
    task = RetentionTask(store, keep, Cursors(store, "alice"), clock=lambda: NOW)

    await task.run_pass()
    await task.run_pass()

    assert [(first, server) for first, _, server, *_ in batch_rows(db_path)] == [(31, "@mail")]


async def test_a_pass_deletes_in_chunks_of_at_most_the_configured_rows(
    store: MessageStore, db_path: Path
) -> None:
    await fill(store, 25, at=NOW - 90 * DAY, per=1)
    await store.set_cursor("alice", store.latest_seq)
    task = RetentionTask(
        store, policy(retain=DAY, chunk_rows=4), Cursors(store, "alice"), clock=lambda: NOW
    )

    report = await task.run_pass()

    assert report.rows == 25
    assert seqs_of(db_path) == []


# -- the size cap --------------------------------------------------------------------------


def used_bytes(db_path: Path) -> int:
    with sqlite3.connect(db_path) as conn:
        pages = conn.execute("PRAGMA page_count").fetchone()[0]
        free = conn.execute("PRAGMA freelist_count").fetchone()[0]
        size = conn.execute("PRAGMA page_size").fetchone()[0]
    conn.close()
    return int((pages - free) * size)


async def test_the_size_cap_deletes_the_oldest_acknowledged_messages_first(
    store: MessageStore, db_path: Path
) -> None:
    await fill(store, 300, at=NOW, per=20)  # young: only the cap can delete them
    await store.set_cursor("alice", 4000)  # rows above 4000 are not acknowledged
    before = used_bytes(db_path)
    cap = before // 2
    task = RetentionTask(store, policy(max_size=cap), Cursors(store, "alice"), clock=lambda: NOW)

    report = await task.run_pass()

    remaining = seqs_of(db_path)
    assert report.messages > 0
    assert report.used_bytes <= cap
    assert remaining == list(range(remaining[0], 6000, 20))  # a suffix: the oldest went
    assert remaining[0] <= 4001


async def test_the_size_cap_waits_for_acknowledgements_rather_than_dropping_owed_messages(
    store: MessageStore, db_path: Path
) -> None:
    await fill(store, 100, at=NOW, per=20)
    await store.set_cursor("alice", 200)
    task = RetentionTask(store, policy(max_size=8192), Cursors(store, "alice"), clock=lambda: NOW)

    report = await task.run_pass()

    assert report.messages == 200
    assert seqs_of(db_path)[0] == 201
    assert report.used_bytes > 8192


async def test_a_new_file_gives_freed_pages_back_to_the_file_system(
    store: MessageStore, db_path: Path
) -> None:
    await fill(store, 200, at=NOW - 90 * DAY, per=20)
    await store.set_cursor("alice", store.latest_seq)
    task = RetentionTask(store, policy(retain=DAY), Cursors(store, "alice"), clock=lambda: NOW)
    with sqlite3.connect(db_path) as conn:
        assert conn.execute("PRAGMA auto_vacuum").fetchone()[0] == 2  # incremental
        pages_before = conn.execute("PRAGMA page_count").fetchone()[0]
    conn.close()

    report = await task.run_pass()

    assert report.bytes_freed > 0
    assert report.file_bytes < pages_before * 8192


# -- ingest goes on ------------------------------------------------------------------------


async def test_ingest_commits_while_a_pass_is_running(store: MessageStore) -> None:
    await fill(store, 2000, at=NOW - 90 * DAY, per=1)
    await store.set_cursor("alice", store.latest_seq)
    floor = Cursors(store, "alice")
    task = RetentionTask(store, policy(retain=DAY, chunk_rows=1), floor, clock=lambda: NOW)
    finished = anyio.Event()

    async def run() -> None:
        await task.run_pass()
        finished.set()

    with anyio.fail_after(60):
        async with anyio.create_task_group() as tg:
            tg.start_soon(run)
            await floor.asked.wait()
            results = await store.submit_wire("demo", [build_wire(10_000)], received_at=NOW)
            assert not finished.is_set()  # the commit did not wait for the pass
            await finished.wait()
    assert results[0].seq == 2001
    assert [m.seq for m in await store.read(0)] == [2001]


# -- reporting -----------------------------------------------------------------------------


async def test_a_pass_that_deleted_something_is_logged_at_info_with_rows_bytes_and_time(
    store: MessageStore, logs: list[MutableMapping[str, Any]]
) -> None:
    await fill(store, 10, at=NOW - 90 * DAY)
    await store.set_cursor("alice", store.latest_seq)
    task = RetentionTask(store, policy(retain=DAY), Cursors(store, "alice"), clock=lambda: NOW)

    await task.run_pass()
    await task.run_pass()

    passes = [e for e in logs if e["event"] == "retention_pass"]
    assert [e["log_level"] for e in passes] == ["info", "debug"]
    assert passes[0]["messages"] == 100
    assert {"rows", "bytes_freed", "took_ms"} <= passes[0].keys()
    summary = task.last_pass()
    assert summary["passes"] == 2
    assert summary["deleted_messages"] == 100
    assert summary["retain_seconds"] == DAY
    last = summary["last"]
    assert isinstance(last, dict)
    assert last["messages"] == 0


async def test_the_scheduler_stops_when_the_store_closes(db_path: Path) -> None:
    store = await MessageStore.open(db_path)
    floor = Cursors(store)
    task = RetentionTask(store, policy(retain=DAY, interval=0.01), floor, clock=lambda: NOW)
    with anyio.fail_after(10):
        async with anyio.create_task_group() as tg:
            tg.start_soon(task.run)
            await floor.asked.wait()
            await store.aclose()
    assert task.last_pass()["passes"] >= 1


async def test_without_retain_or_max_size_the_scheduler_does_nothing(store: MessageStore) -> None:
    task = RetentionTask(store, RetentionPolicy(), Cursors(store), clock=lambda: NOW)
    with anyio.fail_after(5):
        await task.run()
    assert task.last_pass()["passes"] == 0
    assert task.last_pass()["enabled"] is False


# -- the settings --------------------------------------------------------------------------

UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}


@given(
    st.lists(
        st.tuples(st.integers(min_value=0, max_value=10_000), st.sampled_from("smhdSMHD")),
        min_size=1,
        max_size=4,
    ).filter(lambda parts: any(n for n, _ in parts)),
    st.sampled_from(["", " "]),
)
def test_a_duration_is_the_sum_of_its_parts(parts: list[tuple[int, str]], sep: str) -> None:
    text = sep.join(f"{n}{unit}" for n, unit in parts)
    assert parse_duration(text) == sum(n * UNITS[unit.lower()] for n, unit in parts)


@given(st.text(max_size=12))
def test_a_duration_parses_or_is_refused_with_a_value_error(text: str) -> None:
    try:
        seconds = parse_duration(text)
    except ValueError as exc:
        refusal = str(exc)
        seconds = None
    if seconds is None:
        assert "duration" in refusal
    else:
        assert seconds > 0


@pytest.mark.parametrize("bad", ["30", "30 days", "d", "-1d", "0s", "1.d", "1w", "", True])
def test_a_malformed_duration_is_refused_naming_the_units(bad: object) -> None:
    with pytest.raises(ValueError, match="duration"):
        parse_duration(bad)


def test_the_store_settings_read_durations_and_sizes() -> None:
    store = StoreConfig.model_validate(
        {"retain": "30d", "max_size": "2GB", "retention_interval": "90s"}
    )
    assert (store.retain, store.max_size, store.retention_interval) == (30 * DAY, 2 * 10**9, 90)
    assert StoreConfig.model_validate({"max_size": "2GiB"}).max_size == 2 * 2**30
    assert StoreConfig(retain=3600).retain == 3600
    assert StoreConfig().retain is None
    assert StoreConfig().max_size is None


@pytest.mark.parametrize(
    ("field", "value", "words"),
    [
        ("retain", "30x", "write a number and a unit"),
        ("retain", "0d", "positive"),
        ("max_size", "2 parsecs", "byte unit"),
        ("max_size", "0", "more than 0 bytes"),
    ],
)
def test_a_bad_retention_setting_is_refused_with_the_fix(
    field: str, value: str, words: str
) -> None:
    with pytest.raises(ValidationError, match=words):
        StoreConfig.model_validate({field: value})
