"""Placement of a real cluster as instances join: ``[cluster] hold`` and ``settle`` decide
when a key moves to a newly preferred instance (real ``switchboard run`` instances, one
PostgreSQL, one NATS; tests/cluster/harness.py).

Times are read on PostgreSQL's clock (the one placement itself uses): each owner change of a
lease as first seen by a 50 ms poll, and each instance's ``started_at``.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

import anyio
import psycopg
import pytest

from switchboard.cluster.placement import preferred_owner
from tests.cluster.harness import Cluster, MakeCluster, eventually, now
from tests.cluster.support import figure

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

CONNECTORS = ("c0", "c1", "c2", "c3")
HOLD = 6.0
SETTLE = 3.0
TTL = 2.0
#: How late a move may come after it is allowed: the placement tick (ttl/3), the poll, and
#: the drain and release of a handover.
LATE = 3.0
#: How early a move may seem: the 50 ms poll first sees an acquisition up to that late.
EARLY = 0.2


@pytest.fixture
def cluster(make_cluster: MakeCluster) -> Iterator[Cluster]:
    names = ("sb-1", "sb-2", "sb-3")
    with make_cluster(CONNECTORS, names, ttl=TTL, rate=2.0, hold=HOLD, settle=SETTLE) as c:
        yield c


@dataclass
class LeaseLog:
    """When (database time) each connector's lease was first seen with each owner."""

    database: str
    changes: dict[str, list[tuple[str, float]]] = field(default_factory=dict)

    async def follow(self) -> None:
        with psycopg.connect(self.database, autocommit=True) as conn:
            while True:
                rows = conn.execute(
                    "SELECT server_id, owner, extract(epoch FROM now())::float8"
                    " FROM connector_leases WHERE owner IS NOT NULL AND expires_at > now()"
                ).fetchall()
                for sid, owner, at in rows:
                    seen = self.changes.setdefault(sid, [])
                    if not seen or seen[-1][0] != owner:
                        seen.append((owner, float(at)))
                await anyio.sleep(0.05)

    def owner(self, sid: str) -> str | None:
        seen = self.changes.get(sid)
        return seen[-1][0] if seen else None

    def since(self, sid: str) -> float:
        return self.changes[sid][-1][1]


def _started_at(cluster: Cluster, name: str) -> float:
    with psycopg.connect(cluster.database) as conn:
        row = conn.execute(
            "SELECT extract(epoch FROM started_at)::float8 FROM instances WHERE id = %s", (name,)
        ).fetchone()
    assert row is not None
    return float(row[0])


async def test_a_key_moves_to_a_newly_preferred_instance_only_after_hold_and_settle(
    cluster: Cluster,
) -> None:
    first = {sid for sid in CONNECTORS if preferred_owner(sid, ("sb-1", "sb-2")) == "sb-2"}
    third = {sid for sid in CONNECTORS if preferred_owner(sid, ("sb-1", "sb-2", "sb-3")) == "sb-3"}
    # The connector ids are fixed, so which instance each prefers is too.
    assert first, "no connector prefers sb-2: pick other ids"
    assert third - first, "no connector of sb-1 prefers sb-3: pick other ids"
    leases = LeaseLog(cluster.database)
    async with anyio.create_task_group() as group:
        group.start_soon(leases.follow)
        cluster.start("sb-1")
        await eventually(
            lambda: all(leases.owner(sid) == "sb-1" for sid in CONNECTORS), 60, "sb-1 owns all"
        )
        acquired = max(leases.since(sid) for sid in CONNECTORS)
        # Joined at once: sb-1's hold is what keeps the keys, not sb-2's settling.
        cluster.start("sb-2")
        await eventually(
            lambda: all(leases.owner(sid) == "sb-2" for sid in first), 60, "keys move to sb-2"
        )
        joined2 = _started_at(cluster, "sb-2")
        moved2 = {sid: leases.since(sid) for sid in first}
        assert all(leases.owner(sid) == "sb-1" for sid in set(CONNECTORS) - first)
        # sb-3 joins once every hold of sb-1 has passed: its settling is what keeps them.
        await eventually(lambda: now() >= acquired + HOLD + 0.5, 30, "sb-1's holds over")
        cluster.start("sb-3")
        moving = third - first
        await eventually(
            lambda: all(leases.owner(sid) == "sb-3" for sid in moving), 60, "keys move to sb-3"
        )
        joined3 = _started_at(cluster, "sb-3")
        moved3 = {sid: leases.since(sid) for sid in moving}
        group.cancel_scope.cancel()
    held = {sid: moved2[sid] - leases.changes[sid][0][1] for sid in first}
    settled = {sid: moved3[sid] - joined3 for sid in moving}
    figure(
        f"placement (hold {HOLD:g} s, settle {SETTLE:g} s): keys moved to a joining instance "
        f"after sb-1 held them {min(held.values()):.2f}-{max(held.values()):.2f} s (sb-2 live "
        f"{min(moved2.values()) - joined2:.2f} s), and to one joining later after it had been "
        f"live {min(settled.values()):.2f}-{max(settled.values()):.2f} s"
    )
    for sid in first:
        assert HOLD - EARLY <= held[sid] <= HOLD + LATE, (sid, held[sid])
        assert moved2[sid] - joined2 >= SETTLE - EARLY
    for sid in moving:
        assert SETTLE - EARLY <= settled[sid] <= SETTLE + LATE, (sid, settled[sid])
    # Nothing moved that no newcomer is preferred for.
    for sid in set(CONNECTORS) - first - third:
        assert [owner for owner, _ in leases.changes[sid]] == ["sb-1"], leases.changes[sid]
