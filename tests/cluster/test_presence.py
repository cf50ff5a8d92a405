"""The presence part on its own, on a real database: two instances' :class:`ClusterPresence`
with their heartbeats (:class:`LeaseTable`) in this process, so that one can be paused (its
heartbeat and its writes stopped) for longer than the whole-cluster tests can wait."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager

import anyio
import psycopg
import pytest

from switchboard.cluster.leases import LeaseTable
from switchboard.cluster.pg.directory import PgDirectoryDb
from switchboard.cluster.presence import FORGET_AFTER_TTLS, ClusterPresence
from switchboard.directory import Directory
from tests.cluster.harness import eventually
from tests.cluster.support import figure

pytestmark = pytest.mark.anyio

TTL = 0.5


@asynccontextmanager
async def instance(
    url: str, me: str, presence: ClusterPresence | None = None
) -> AsyncIterator[tuple[ClusterPresence, Callable[[], None]]]:
    """A live instance ``me``: its heartbeat and its presence (``presence``, to resume one
    that was paused) running; the callable pauses both (as SIGSTOP would)."""
    table = LeaseTable(url, me, TTL)
    await table.register(None, {})
    presence = presence if presence is not None else ClusterPresence(url, me, TTL)

    async def beat() -> None:
        while True:
            await table.heartbeat()
            await anyio.sleep(TTL / 3)

    try:
        async with anyio.create_task_group() as group:
            group.start_soon(beat)
            await group.start(presence.run)
            yield presence, group.cancel_scope.cancel
            group.cancel_scope.cancel()
    finally:
        await table.aclose()
        await presence.aclose()


def attachment_rows(url: str) -> set[tuple[str, str, int]]:
    with psycopg.connect(url) as conn:
        rows = conn.execute("SELECT agent, instance, count FROM attachments").fetchall()
    return {(r[0], r[1], int(r[2])) for r in rows}


@contextmanager
def directory_with_ag(url: str) -> Iterator[Directory]:
    """The directory of the database at ``url``, with the agent ``@ag`` in it."""
    db = PgDirectoryDb.open(url)
    try:
        directory = Directory(db)
        directory.register("@ag", holder="@ag")
        yield directory
    finally:
        db.close()


async def test_a_paused_instance_stops_counting_its_rows_are_forgotten_and_written_back_on_return(
    pg_url: str,
) -> None:
    with directory_with_ag(pg_url) as directory:

        def shown() -> bool:
            return directory.lookup("@ag").online

        async with instance(pg_url, "a"):
            async with instance(pg_url, "b") as (b, pause):
                b.counted("@ag", 2)
                await eventually(shown, 5, "online")
                pause()
            paused = anyio.current_time()
            await eventually(lambda: not shown(), 5, "offline once b is not live")
            offline_after = anyio.current_time() - paused
            await eventually(
                lambda: not attachment_rows(pg_url), FORGET_AFTER_TTLS * TTL + 5, "rows forgotten"
            )
            assert anyio.current_time() - paused >= FORGET_AFTER_TTLS * TTL - TTL
            # b wakes up, its sessions still open: its sweep writes its rows again.
            async with instance(pg_url, "b", b):
                await eventually(shown, 5, "online again")
                assert attachment_rows(pg_url) == {("@ag", "b", 2)}
        figure(f"presence: a paused instance's agent shown offline after {offline_after:.2f} s")


async def test_two_instances_changing_one_agent_at_once_never_leave_a_stale_flag(
    pg_url: str,
) -> None:
    with directory_with_ag(pg_url) as directory:
        async with instance(pg_url, "a") as (a, _), instance(pg_url, "b") as (b, _):
            for round_ in range(20):
                # One attaches where the other detaches, at the same moment.
                a.counted("@ag", round_ % 2)
                b.counted("@ag", (round_ + 1) % 2)
                instance_left = "a" if round_ % 2 else "b"

                def written(left: str = instance_left) -> bool:
                    return {row[1] for row in attachment_rows(pg_url)} == {left}

                await eventually(written, 5, "both written")
                assert directory.lookup("@ag").online
            a.counted("@ag", 0)
            b.counted("@ag", 0)
            await eventually(lambda: not directory.lookup("@ag").online, 5, "offline")
