"""The writer thread on its own: group commit, one notification per group, failure isolation,
and stop. Jobs are queued before the thread starts, so they form one group deterministically."""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path

import pytest

from switchboard.store import AppendResult, StoreError
from switchboard.store.schema import encode_rows, open_writer
from switchboard.store.writer import AppendJob, CursorJob, GroupWriter, Job
from tests.store.storekit import build_record


class Notifications:
    """Records every on_group_done call, from whichever thread makes it."""

    def __init__(self) -> None:
        self.calls: list[tuple[list[Job[str]], int, str]] = []

    def __call__(self, jobs: list[Job[str]], latest: int) -> None:
        self.calls.append((list(jobs), latest, threading.current_thread().name))


def job(first: int, count: int, waiter: str, **overrides: str) -> AppendJob[str]:
    records = [build_record(n, **overrides) for n in range(first, first + count)]
    return AppendJob(encode_rows(records, 1.0), waiter)


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
    with sqlite3.connect(db_path) as check:
        assert check.execute("SELECT count(*) FROM messages").fetchone() == (5,)
        assert check.execute("SELECT seq FROM cursors WHERE agent = 'alice'").fetchone() == (4,)
    check.close()


def test_one_bad_job_in_a_group_fails_alone_and_its_neighbours_commit(db_path: Path) -> None:
    conn = open_writer(db_path, "normal")
    conn.execute(
        "CREATE TRIGGER poison BEFORE INSERT ON messages WHEN NEW.author_id = 'mallory' "
        "BEGIN SELECT RAISE(ABORT, 'poisoned'); END"
    )
    seen = Notifications()
    writer: GroupWriter[str] = GroupWriter(conn, 0, seen)
    good_1, bad, good_2 = job(0, 2, "a"), job(2, 2, "b", author_id="mallory"), job(4, 1, "c")
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
