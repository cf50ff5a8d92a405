"""The writer thread on its own: group commit, one notification per group, failure isolation,
and stop. Jobs are queued before the thread starts, so they form one group deterministically."""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path

import pytest

from switchboard.store import AppendResult, StoreError
from switchboard.store.dedupe import DedupeIndex
from switchboard.store.sqlite.schema import open_writer
from switchboard.store.sqlite.writer import AppendJob, CursorJob, GroupWriter, Job
from switchboard.store.wire import encode_body, keys_of
from tests.store.storekit import batch_rows, build_wire


class Notifications:
    """Records every on_group_done call, from whichever thread makes it."""

    def __init__(self) -> None:
        self.calls: list[tuple[list[Job[str]], int, str]] = []

    def __call__(self, jobs: list[Job[str]], latest: int) -> None:
        self.calls.append((list(jobs), latest, threading.current_thread().name))


def job(first: int, count: int, waiter: str, server_id: str = "demo") -> AppendJob[str]:
    messages = [build_wire(n) for n in range(first, first + count)]
    return AppendJob(
        server_id, keys_of(server_id, messages), messages, encode_body(messages), 1.0, waiter
    )


def run_to_end(writer: GroupWriter[str]) -> None:
    writer.stop()
    writer.start()
    writer.join()


def test_jobs_queued_together_are_committed_as_one_group_with_one_notification(
    db_path: Path,
) -> None:
    seen = Notifications()
    writer: GroupWriter[str] = GroupWriter(open_writer(db_path, "normal"), 0, seen)
    jobs: list[Job[str]] = [job(0, 3, "a"), job(3, 2, "b"), CursorJob("alice", 4, "c")]
    for queued in jobs:
        writer.put(queued)

    run_to_end(writer)

    assert len(seen.calls) == 1
    group, latest, thread = seen.calls[0]
    assert group == jobs
    assert latest == 5
    assert thread == "switchboard-store-writer"
    first, second, cursor = jobs
    assert isinstance(first, AppendJob)
    assert isinstance(second, AppendJob)
    assert first.results == [AppendResult(s, False) for s in (1, 2, 3)]
    assert second.results == [AppendResult(s, False) for s in (4, 5)]
    assert cursor.error is None
    rows = batch_rows(db_path)
    assert [(first_seq, count) for first_seq, count, *_ in rows] == [(1, 3), (4, 2)]
    assert [m["messageId"] for *_, body in rows for m in body] == [f"m-{n}" for n in range(5)]
    with sqlite3.connect(db_path) as check:
        assert check.execute("SELECT seq FROM cursors WHERE agent = 'alice'").fetchone() == (4,)
    check.close()


def test_one_bad_job_in_a_group_fails_alone_and_its_neighbours_commit(db_path: Path) -> None:
    conn = open_writer(db_path, "normal")
    conn.execute(
        "CREATE TRIGGER poison BEFORE INSERT ON batches WHEN NEW.server_id = 'mallory' "
        "BEGIN SELECT RAISE(ABORT, 'poisoned'); END"
    )
    seen = Notifications()
    writer: GroupWriter[str] = GroupWriter(conn, 0, seen)
    good_1, bad, good_2 = job(0, 2, "a"), job(2, 2, "b", server_id="mallory"), job(4, 1, "c")
    for queued in (good_1, bad, good_2):
        writer.put(queued)

    run_to_end(writer)

    assert len(seen.calls) == 1
    assert good_1.results == [AppendResult(1, False), AppendResult(2, False)]
    assert bad.results is None
    assert isinstance(bad.error, StoreError)
    assert isinstance(bad.error.__cause__, sqlite3.Error)
    assert good_2.results == [AppendResult(3, False)]
    assert seen.calls[0][1] == 3


def test_a_group_with_duplicates_across_jobs_answers_each_row_with_the_first_copy(
    db_path: Path,
) -> None:
    seen = Notifications()
    writer: GroupWriter[str] = GroupWriter(open_writer(db_path, "normal"), 0, seen)
    first, overlapping = job(0, 3, "a"), job(2, 3, "b")
    writer.put(first)
    writer.put(overlapping)

    run_to_end(writer)

    assert first.results == [AppendResult(s, False) for s in (1, 2, 3)]
    assert overlapping.results == [
        AppendResult(3, True),
        AppendResult(4, False),
        AppendResult(5, False),
    ]
    assert seen.calls[0][1] == 5
    rows = batch_rows(db_path)
    assert [(first_seq, count) for first_seq, count, *_ in rows] == [(1, 3), (4, 2)]
    assert [m["messageId"] for m in rows[1][4]] == ["m-3", "m-4"]  # re-encoded without m-2


def test_a_group_that_fails_as_a_whole_forgets_its_keys_so_a_retry_is_new(db_path: Path) -> None:
    conn = open_writer(db_path, "normal")
    conn.execute(
        "CREATE TRIGGER poison BEFORE INSERT ON batches BEGIN SELECT RAISE(ABORT, 'poisoned'); END"
    )
    index = DedupeIndex(100)
    failing: GroupWriter[str] = GroupWriter(conn, 0, Notifications(), index=index)
    first, overlapping = job(0, 3, "a"), job(2, 3, "b")
    failing.put(first)
    failing.put(overlapping)
    run_to_end(failing)
    assert isinstance(first.error, StoreError)
    assert isinstance(overlapping.error, StoreError)
    assert len(index) == 0

    conn = open_writer(db_path, "normal")
    conn.execute("DROP TRIGGER poison")
    writer: GroupWriter[str] = GroupWriter(conn, 0, Notifications(), index=index)
    retried = job(2, 3, "c")
    writer.put(retried)
    run_to_end(writer)

    assert retried.results == [AppendResult(s, False) for s in (1, 2, 3)]
    assert len(index) == 3


def test_a_batch_of_only_duplicates_writes_no_row(db_path: Path) -> None:
    seen = Notifications()
    writer: GroupWriter[str] = GroupWriter(open_writer(db_path, "normal"), 0, seen)
    first, again = job(0, 2, "a"), job(0, 2, "b")
    writer.put(first)
    writer.put(again)

    run_to_end(writer)

    assert again.results == [AppendResult(1, True), AppendResult(2, True)]
    assert [(first_seq, count) for first_seq, count, *_ in batch_rows(db_path)] == [(1, 2)]
    assert seen.calls[0][1] == 2


def test_a_group_of_more_rows_than_one_statement_takes_is_committed_in_order(
    db_path: Path,
) -> None:
    seen = Notifications()
    writer: GroupWriter[str] = GroupWriter(open_writer(db_path, "normal"), 0, seen)
    jobs = [job(2 * k, 2, str(k), server_id=f"s{k % 3}") for k in range(150)]
    for queued in jobs:
        writer.put(queued)

    run_to_end(writer)

    assert len(seen.calls) == 1
    assert [r.seq for j in jobs for r in j.results or []] == list(range(1, 301))
    rows = batch_rows(db_path)
    assert [(first_seq, server) for first_seq, _, server, *_ in rows] == [
        (2 * k + 1, f"s{k % 3}") for k in range(150)
    ]


def test_stopping_commits_what_was_queued_and_closes_the_connection(db_path: Path) -> None:
    conn = open_writer(db_path, "normal")
    seen = Notifications()
    writer: GroupWriter[str] = GroupWriter(conn, 0, seen)
    writer.put(job(0, 1, "a"))

    run_to_end(writer)

    assert not writer.alive
    assert writer.stopped
    assert seen.calls[0][1] == 1
    with pytest.raises(sqlite3.ProgrammingError, match="closed"):
        conn.execute("SELECT 1")
