"""An agent leaving a channel on one instance of a real cluster stops its traffic on every
other instance: at once by the ``inval.leaves`` word on NATS, and within the versions poll
when NATS is gone. Rejoining reverses it the same ways.

Two ``switchboard run`` instances on one PostgreSQL and a NATS server of the test's own;
``@ann`` and ``@bob`` both have ``p1:room`` as their home, so ``@bob`` closing it leaves it
(it stays open for ``@ann``). ``@bob`` closes and reopens it through the instance that owns
``p1`` while a session of his on the other instance keeps reading.
"""

from __future__ import annotations

from typing import Any

import pytest
from mcp import Client

from tests.cluster.agents import agent, private_nats, reading
from tests.cluster.harness import Cluster, MakeCluster, eventually, now
from tests.cluster.support import figure

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

ANN = "ann-token-0123456789abcdefghijklmnopqrs"
BOB = "bob-token-0123456789abcdefghijklmnopqrs"
#: How long after a leave the other instance may still route the channel to the agent.
WITH_NATS = 0.5
#: ... when it learns of it by polling the versions rows (every second).
POLLING = 2.0


async def test_a_leave_on_one_instance_stops_the_channel_on_another_with_and_without_nats(
    make_cluster: MakeCluster,
) -> None:
    with (
        private_nats() as (nats_url, kill_nats, _start_nats),
        make_cluster(
            ("p1",),
            ("sb-1", "sb-2"),
            nats_url=nats_url,
            ttl=2.0,
            rate=10.0,
            agents={"@ann": ANN, "@bob": BOB},
            homes={"@ann": "p1:room", "@bob": "p1:room"},
            default_delivery="@ann",
        ) as cluster,
    ):
        await _leaves(cluster, kill_nats)


async def _leaves(cluster: Cluster, kill_nats: Any) -> None:
    for name in cluster.names:
        cluster.start(name)
    await eventually(lambda: cluster.owners().get("p1"), 60, "p1 owned")
    owner = cluster.owners()["p1"]
    other = next(n for n in cluster.names if n != owner)
    figures: list[str] = []
    async with (
        agent(cluster.instances[owner].url, BOB) as here,
        agent(cluster.instances[other].url, BOB) as there,
        # What reached @bob on the other instance: (when, message id).
        reading(there, lambda m: (now(), str(m["message_id"])), wait=0.5) as got,
    ):
        await eventually(lambda: len(got) >= 3, 30, "@bob reads p1 on the other instance")
        for how, bound in (("NATS", WITH_NATS), ("polling", POLLING)):
            if how == "polling":
                kill_nats()
            stopped = await _leave(cluster, here, got, bound)
            resumed = await _rejoin(here, got)
            figures.append(
                f"by {how}: stopped after {stopped:.2f} s, resumed after {resumed:.2f} s"
            )
            assert stopped <= bound, (how, stopped)
            assert resumed <= bound + 1.0, (how, resumed)
    figure("leaves across instances: " + "; ".join(figures))


async def _leave(
    cluster: Cluster, here: Client, got: list[tuple[float, str]], bound: float
) -> float:
    """Leave p1:room through ``here``; how long after it the other instance still routed p1's
    traffic to @bob (by when each routed message was acknowledged to the platform)."""
    left_at = now()
    closed = await here.call_tool("channel_close", {"channel": "p1:room"})
    assert not closed.is_error, closed.content
    assert (closed.structured_content or {}).get("status") == "left", closed.structured_content
    # Traffic goes on well past the bound, none of it for @bob.
    await eventually(
        lambda: len(cluster.acked_after("p1", left_at + bound + 1.0)) >= 5, 30, "more traffic"
    )
    acked = {f"p1-{n}": t for n, t in cluster.acked("p1")}
    routed = [acked[mid] for t, mid in got if t >= left_at and mid in acked]
    return max((t - left_at for t in routed), default=0.0)


async def _rejoin(here: Client, got: list[tuple[float, str]]) -> float:
    """Rejoin p1:room through ``here``; how long until @bob reads it on the other instance."""
    rejoined_at = now()
    opened = await here.call_tool("channel_open", {"channel": "p1:room"})
    assert not opened.is_error, opened.content
    assert "You rejoined" in str(opened.content), opened.content
    first = await eventually(
        lambda: next((t for t, _ in got if t > rejoined_at), None), 30, "@bob reads p1 again"
    )
    return float(first) - rejoined_at
