"""The agents' lifetimes in a real cluster of three ``switchboard run`` instances.

A task agent lives on the instance that started it (its token is known only there): that
instance ends it at its deadline, whichever instance holds the ``@job:lifetimes`` lease; a
restart of the job's holder ends no task live elsewhere; and the tasks of an instance killed
-9 are ended (reason ``restart``) by the job's holder, their parent told once.
"""

from __future__ import annotations

from collections.abc import Iterator
from functools import partial
from typing import Any

import pytest
from mcp import Client

from tests.cluster.agents import agent, read, reading
from tests.cluster.harness import Cluster, MakeCluster, eventually, now
from tests.cluster.support import figure

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

BOSS = "boss-token-0123456789abcdefghijklmnopqr"
TTL = 2.0
JOB = "@job:lifetimes"


@pytest.fixture
def cluster(make_cluster: MakeCluster) -> Iterator[Cluster]:
    with make_cluster((), ("sb-1", "sb-2", "sb-3"), ttl=TTL, agents={"@boss": BOSS}) as c:
        yield c


def _job_holder(cluster: Cluster) -> str | None:
    owner, _, left = cluster.leases().get(JOB, (None, 0, 0.0))
    return owner if left > 0 else None


async def _spawn(client: Client, handle: str, **limits: Any) -> str:
    """Start the task ``handle``; its token."""
    spawned = await client.call_tool("agent_spawn", {"handle": handle, **limits})
    assert not spawned.is_error, spawned.content
    return str((spawned.structured_content or {})["token"])


def _results(mail: list[str], handle: str) -> list[str]:
    """The reasons of the task results ``handle`` sent its parent."""
    head = f"[task result] {handle} ended: "
    return [text.split(head, 1)[1].split()[0] for text in mail if head in text]


async def test_each_task_ends_once_where_it_lives_across_restarts_and_kills_of_instances(
    cluster: Cluster,
) -> None:
    for name in cluster.names:
        cluster.start(name)
    await eventually(lambda: all(map(cluster.live, cluster.names)), 60, "all live")
    holder = await eventually(lambda: _job_holder(cluster), 30, "the lifetimes job leased")
    x, y = (n for n in cluster.names if n != holder)
    facts: list[str] = []
    async with (
        agent(cluster.instances[x].url, BOSS) as on_x,
        agent(cluster.instances[y].url, BOSS) as on_y,
        reading(on_x, lambda m: str(m["text"]), wait=0.5) as mail,
    ):
        spawned = now()
        await _spawn(on_x, "@t-deadline", deadline_seconds=2)
        alive = await _spawn(on_x, "@t-alive")
        await _spawn(on_y, "@t-orphan")
        # Its own instance ends it, though another holds the job.
        await eventually(lambda: _results(mail, "@t-deadline"), 15, "@t-deadline ended")
        facts.append(f"a task on a non-holder ended at its deadline after {now() - spawned:.2f} s")

        await cluster.terminate(holder)
        cluster.start(holder)
        await eventually(partial(cluster.live, holder), 30, "the job's holder back")
        await eventually(lambda: _job_holder(cluster), 30, "the lifetimes job leased again")
        looked = await on_x.call_tool("directory_lookup", {"address": "@t-alive"})
        assert not looked.is_error, "the restarted instance ended a task live elsewhere"
        async with agent(cluster.instances[x].url, alive) as task:
            await read(task, 0)

        killed = now()
        cluster.kill9(y)
        await eventually(lambda: _results(mail, "@t-orphan"), 2 * TTL + 15, "@t-orphan ended")
        facts.append(
            f"the task of an instance killed -9 ended (restart) after {now() - killed:.2f} s"
        )
        # Long enough for a second sweep or a second tick to tell anyone twice.
        settle = now()
        await eventually(lambda: now() > settle + 2 * TTL, 10, "a few more ticks")
    figure("lifetimes in a cluster of 3: " + "; ".join(facts))
    assert _results(mail, "@t-deadline") == ["deadline"]
    assert _results(mail, "@t-orphan") == ["restart"]
    assert _results(mail, "@t-alive") == []
