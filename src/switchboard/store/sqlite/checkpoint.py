"""Background WAL checkpoints, so that the writer's commits stay short.

One extra connection and one thread copy committed pages from the write-ahead log into the
database file (a ``PASSIVE`` checkpoint, which never blocks the writer or readers) whenever
enough has been written since the last one.

What it deliberately does not know: batches, sequence numbers, the event loop, or the writer.
"""

from __future__ import annotations

import sqlite3
import threading
from typing import Final

import structlog

__all__ = ["DEFAULT_EVERY_BYTES", "Checkpointer"]

log = structlog.get_logger(__name__)

DEFAULT_EVERY_BYTES: Final = 4 * 1024 * 1024


class Checkpointer:
    """Runs a ``PASSIVE`` checkpoint on its own thread after every ``every_bytes`` committed.

    What it knows: one extra SQLite connection and one thread that copies committed pages from the
    write-ahead log into the database file (a ``PASSIVE`` checkpoint: it never blocks the writer or
    readers) whenever enough has been written since the last one.

    Why: a checkpoint copies every page of the WAL into the database and syncs both files. Left to
    SQLite's automatic checkpoint, that work happens inside a commit of the writer thread, which
    then stalls every submitter for as long as the copy takes (for a 64 MiB WAL, a good fraction of
    a second on a small machine). Here the copy runs beside the writer, on another core, since
    SQLite releases the GIL. The writer's automatic checkpoint stays on as a backstop with a larger
    threshold: it finds most frames already copied, so it only copies the rest and lets SQLite start
    the WAL file over. Durability is unchanged: a commit is durable (per the ``synchronous``
    setting) when it is in the WAL, checkpointed or not.

    Args:
        conn: a connection to the database, for this object alone; it is closed at the end.
        every_bytes: how much the writer commits between two checkpoint requests.
    """

    def __init__(self, conn: sqlite3.Connection, *, every_bytes: int = DEFAULT_EVERY_BYTES) -> None:
        self._conn = conn
        self._every = every_bytes
        self._written = 0  # touched by the writer thread only
        self._requested = 0  # checkpoints asked for; written by the writer thread only
        self._wake = threading.Event()
        self._stopping = False
        self._thread = threading.Thread(
            target=self._run, name="switchboard-store-checkpoint", daemon=True
        )
        self.runs = 0  # checkpoints done (for tests and operations)
        # The last (busy, wal_frames, copied_frames) SQLite answered, for tests and operations.
        self.last: tuple[int, int, int] | None = None

    def start(self) -> None:
        """Start the checkpoint thread."""
        self._thread.start()

    def wrote(self, nbytes: int) -> None:
        """Called after a commit of ``nbytes`` (by the writer thread, or by the event loop's
        for a batch committed there); cheap unless a checkpoint becomes due, then it wakes the
        checkpoint thread (once). The two callers may rarely overlap: a lost addition only
        moves the next checkpoint by one commit's bytes."""
        self._written += nbytes
        if self._written >= self._every:
            self._written = 0
            self._requested += 1
            self._wake.set()

    def stop(self) -> None:
        """Ask the thread to finish, after a checkpoint already asked for."""
        self._stopping = True
        self._wake.set()

    def join(self) -> None:
        """Block until the thread has ended and closed its connection (call :meth:`stop`)."""
        self._thread.join()

    def _run(self) -> None:
        done = 0
        try:
            while True:
                self._wake.wait()
                self._wake.clear()
                if self._requested != done:  # requests that came meanwhile make one run
                    done = self._requested
                    self._checkpoint()
                if self._stopping:
                    return
        finally:
            try:
                self._conn.close()
            except sqlite3.Error as exc:  # pragma: no cover - close of a healthy connection
                log.warning("store_checkpoint_close_failed", error=repr(exc))

    def _checkpoint(self) -> None:
        try:
            busy, frames, copied = self._conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
        except sqlite3.Error as exc:  # the writer's own checkpoint still backs this up
            log.warning("store_checkpoint_failed", error=repr(exc))
            return
        self.runs += 1
        self.last = (int(busy), int(frames), int(copied))
        log.debug("store_checkpointed", busy=busy, wal_frames=frames, copied=copied)
