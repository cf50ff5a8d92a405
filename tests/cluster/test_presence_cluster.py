"""An agent's presence across a real cluster: online while any live instance has a session of it.

Two ``switchboard run`` instances share PostgreSQL and NATS. ``@watcher`` attaches (MCP Python
SDK over streamable HTTP) to one or both; ``@observer``, attached to an instance that stays
up, reads ``@watcher``'s directory entry with the ``directory_lookup`` tool, as any agent
would. The rows of ``attachments`` are read only to know when an instance has written.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, suppress

import anyio
import httpx2
import psycopg
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from tests.cluster.harness import Cluster, MakeCluster, eventually, eventually_async, now
from tests.cluster.support import figure

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

WATCHER = "watcher-token-0123456789abcdefghijklmnop"
OBSERVER = "observer-token-0123456789abcdefghijklmn"
TTL = 2.0


@pytest.fixture
def cluster(make_cluster: MakeCluster) -> Iterator[Cluster]:
    with make_cluster(
        (),
        ("sb-1", "sb-2"),
        ttl=TTL,
        agents={"@watcher": WATCHER, "@observer": OBSERVER},
        # Two agents: one of them gets the untargeted traffic.
        default_delivery="@observer",
    ) as c:
        yield c


@asynccontextmanager
async def session(url: str, token: str) -> AsyncIterator[Client]:
    """A session of the agent whose token is ``token``; it ends (DELETE) on the way out."""
    async with (
        httpx2.AsyncClient(timeout=30, headers={"Authorization": f"Bearer {token}"}) as http,
        Client(streamable_http_client(url + "/mcp", http_client=http), mode="legacy") as client,
    ):
        await client.list_tools()
        yield client


def idle_ttl(cluster: Cluster, seconds: float) -> None:
    """Give ``@watcher`` an ``idle_ttl`` on every instance."""
    for instance in cluster.instances.values():
        token = f'token = "{WATCHER}"\n'
        text = instance.config.read_text()
        instance.config.write_text(text.replace(token, token + f"idle_ttl = {seconds}\n"))


async def listed(observer: Client, address: str = "@watcher") -> bool:
    """Whether ``address`` is in the directory (an agent that ended is not)."""
    result = await observer.call_tool("directory_lookup", {"address": address})
    return not result.is_error


async def online(observer: Client, address: str = "@watcher") -> bool:
    """Whether ``address`` is online, as the directory tells an agent."""
    result = await observer.call_tool("directory_lookup", {"address": address})
    assert not result.is_error, result.content
    return bool((result.structured_content or {})["entry"]["online"])


def rows(cluster: Cluster) -> dict[tuple[str, str], int]:
    """The rows of ``attachments``: (agent, instance) → count."""
    with psycopg.connect(cluster.database) as conn:
        found = conn.execute("SELECT agent, instance, count FROM attachments").fetchall()
    return {(r[0], r[1]): int(r[2]) for r in found}


async def _up(cluster: Cluster) -> None:
    for name in cluster.names:
        cluster.start(name)

    def live() -> bool:
        with psycopg.connect(cluster.database) as conn:
            found = conn.execute(
                "SELECT count(*) FROM instances WHERE heartbeat_at > now() - interval '2 s'"
            ).fetchone()
        return found is not None and found[0] == len(cluster.names)

    await eventually(live, 60, "both instances live")


@asynccontextmanager
async def held(url: str, token: str) -> AsyncIterator[anyio.Event]:
    """A session kept open in the background until the returned event is set (or its
    instance dies under it)."""
    release = anyio.Event()
    ready = anyio.Event()

    async def keep() -> None:
        with suppress(Exception):
            async with session(url, token):
                ready.set()
                await release.wait()

    async with anyio.create_task_group() as group:
        group.start_soon(keep)
        with anyio.fail_after(30):
            await ready.wait()
        try:
            yield release
        finally:
            release.set()


async def test_an_agent_with_sessions_on_two_instances_stays_online_until_its_last_one_ends(
    cluster: Cluster,
) -> None:
    await _up(cluster)
    a, b = (cluster.instances[n].url for n in cluster.names)
    async with session(a, OBSERVER) as observer:
        async with held(a, WATCHER) as end_a:
            async with held(b, WATCHER) as end_b:
                await eventually_async(lambda: online(observer), 10, "@watcher online")
                await eventually(
                    lambda: {("@watcher", "sb-1"), ("@watcher", "sb-2")} <= rows(cluster).keys(),
                    10,
                    "both instances' rows",
                )
                end_b.set()
            # sb-2 has written that its session ended: the flag was set in the same write.
            await eventually(
                lambda: ("@watcher", "sb-2") not in rows(cluster), 10, "sb-2's row gone"
            )
            assert await online(observer), "still attached on sb-1, shown offline"
            end_a.set()
        started = now()
        await eventually_async(
            lambda: _offline(observer), 10, "@watcher offline after its last session"
        )
        figure(f"presence: offline {now() - started:.2f} s after an agent's last session ended")
        assert rows(cluster) == {("@observer", "sb-1"): 1}


async def _offline(observer: Client) -> bool:
    return not await online(observer)


@asynccontextmanager
async def watched(cluster: Cluster) -> AsyncIterator[Client]:
    """Both instances up, a session of ``@watcher`` held on sb-2, and ``@observer``'s session
    on sb-1 (what is yielded) once it sees ``@watcher`` online."""
    await _up(cluster)
    a, b = (cluster.instances[n].url for n in cluster.names)
    async with session(a, OBSERVER) as observer, held(b, WATCHER):
        await eventually_async(lambda: online(observer), 10, "@watcher online")
        yield observer


async def test_an_instance_killed_without_cleanup_stops_counting_within_the_lease(
    cluster: Cluster,
) -> None:
    async with watched(cluster) as observer:
        cluster.kill9("sb-2")
        killed = now()
        await eventually_async(lambda: _offline(observer), 10, "@watcher offline")
        took = now() - killed
    # The heartbeat is renewed every ttl/3 and the others sweep every ttl/3.
    assert took <= TTL + 2 * TTL / 3 + 1.0, took
    figure(f"presence: an agent of a kill -9'd instance shown offline after {took:.2f} s (ttl 2 s)")
    assert rows(cluster).get(("@watcher", "sb-2")) == 1, "the dead instance's row is kept"

    # Restarted under the same id: the old row is gone, and a new session counts once.
    a, b = (cluster.instances[n].url for n in cluster.names)
    cluster.start("sb-2")
    await eventually(lambda: ("@watcher", "sb-2") not in rows(cluster), 60, "old row gone")
    async with session(a, OBSERVER) as observer:
        assert not await online(observer)
        async with session(b, WATCHER):
            await eventually(
                lambda: rows(cluster).get(("@watcher", "sb-2")) == 1, 10, "counted once"
            )
            assert await online(observer)


async def test_a_graceful_stop_removes_the_instances_rows_and_its_agents_go_offline_at_once(
    cluster: Cluster,
) -> None:
    async with watched(cluster) as observer:
        await cluster.terminate("sb-2")
        # At once: no lease_ttl to wait for.
        assert not [key for key in rows(cluster) if key[1] == "sb-2"]
        assert not await online(observer)


async def test_an_agent_attached_only_where_lifetimes_do_not_run_is_not_ended_as_idle(
    cluster: Cluster,
) -> None:
    idle = 3.0
    idle_ttl(cluster, idle)
    await _up(cluster)
    job = await eventually(
        lambda: cluster.leases().get("@job:lifetimes", (None,))[0], 30, "lifetimes placed"
    )
    elsewhere = next(n for n in cluster.names if n != job)
    async with session(cluster.instances[job].url, OBSERVER) as observer:
        async with held(cluster.instances[elsewhere].url, WATCHER):
            await eventually_async(lambda: online(observer), 10, "@watcher online")
            # Well past its idle_ttl, attached (but silent) on the instance without the job.
            until = now() + idle + 2 * TTL
            while now() < until:
                assert await listed(observer), "ended as idle while attached elsewhere"
                await anyio.sleep(0.2)
        detached = now()
        await eventually_async(
            lambda: _gone(observer), idle + 4 * TTL, "@watcher ended once detached"
        )
        assert now() - detached >= idle - 0.5


async def _gone(observer: Client) -> bool:
    return not await listed(observer)
