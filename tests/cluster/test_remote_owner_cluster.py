"""A connector's tools and context hook, used by an agent on an instance that does not run the
connector: each request goes to the owning instance over NATS and its answer comes back.

Two ``switchboard run`` instances on one PostgreSQL and one NATS; the agent (MCP Python SDK
over streamable HTTP) attaches to the instance that does not own ``p1``. The fake platform
(tests/cluster/platform_connector.py) answers ``whereami`` with the pid of the instance running
it, repeats in its ``beforeUser`` injection the text it observed, never answers ``stall``, and
stops answering the hook while a file says so. Then the owner is killed (-9): until its lease
runs out the agent's instance still names it, and finds nobody serving the connector.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest
from mcp import Client

from tests.cluster.agents import agent, read
from tests.cluster.harness import Cluster, MakeCluster, eventually, eventually_async
from tests.cluster.support import figure

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

TOKEN = "watcher-token-0123456789abcdefghijklmnop"
REQUEST_TIMEOUT = 1.0
#: The agent side's wait for connectors' context at the start of a turn (docs/tools.md).
CONTEXT_TIMEOUT = 5.0


@pytest.fixture
def cluster(make_cluster: MakeCluster) -> Iterator[Cluster]:
    with make_cluster(
        ("p1",),
        ("sb-1", "sb-2"),
        ttl=2.0,
        rate=2.0,
        agents={"@watcher": TOKEN},
        request_timeout=REQUEST_TIMEOUT,
    ) as c:
        yield c


def _context(page: dict[str, Any]) -> dict[str, str]:
    """The injections of ``p1`` an inbox page carries, by position: their text."""
    return {
        item["position"]: "".join(block.get("text", "") for block in item["content"])
        for item in page.get("context") or []
        if item.get("serverId") == "p1"
    }


async def _turn(client: Client) -> tuple[dict[str, Any], float]:
    """An inbox read that begins a turn (it waits for a message), and how long it took."""
    started = time.monotonic()
    while True:
        result = await client.call_tool("inbox", {"wait_seconds": 5})
        assert not result.is_error, result.content
        page: dict[str, Any] = result.structured_content or {}
        if page["messages"]:
            return page, time.monotonic() - started


async def test_connector_tools_and_context_hooks_reach_the_owner_elsewhere_and_answer_back(
    cluster: Cluster,
) -> None:
    for name in cluster.names:
        cluster.start(name)
    await eventually(lambda: cluster.owners().get("p1"), 60, "p1 owned")
    owner = cluster.owners()["p1"]
    mine = next(n for n in cluster.names if n != owner)
    owner_pid = cluster.instances[owner].process.pid  # type: ignore[union-attr]

    async def up() -> bool:
        return await cluster.status(mine) is not None

    await eventually_async(up, 60, f"{mine} answers")
    facts: list[str] = []
    async with agent(cluster.instances[mine].url, TOKEN) as client:

        async def listed() -> bool:
            return "p1__whereami" in {t.name for t in (await client.list_tools()).tools}

        await eventually_async(listed, 30, "p1's tools listed on the other instance")
        started = time.monotonic()
        answered = await client.call_tool("p1__whereami", {})
        assert not answered.is_error, answered.content
        assert answered.structured_content == {"server": "p1", "ppid": owner_pid}
        facts.append(f"a tool answered in {time.monotonic() - started:.3f} s")

        page, _ = await _turn(client)
        seen = _context(page)
        texts = [m["text"] for m in page["messages"] if m["server_id"] == "p1"]
        assert texts, page["messages"]
        # What the owner's connector observed is this turn's text from it.
        assert all(text in seen["beforeUser"] for text in texts), (seen, texts)
        assert seen["afterUser"] == "after"

        stalled = time.monotonic()
        timed_out = await client.call_tool("p1__stall", {})
        took = time.monotonic() - stalled
        assert timed_out.is_error
        assert (timed_out.meta or {})["switchboard/refusal"]["refusal"] == "unconfirmed"
        assert REQUEST_TIMEOUT <= took < REQUEST_TIMEOUT + 3.0, took
        facts.append(f"an unanswered tool call was unconfirmed after {took:.2f} s")

        (cluster.platform / "p1.stall-context").touch()
        page, waited = await _turn(client)
        assert _context(page) == {}
        assert page["messages"]
        facts.append(f"an unanswered context hook added nothing, the read took {waited:.2f} s")
        (cluster.platform / "p1.stall-context").unlink()

        cluster.kill9(owner)
        # The owner is gone, its lease not yet: the agent's instance still names it.
        assert cluster.owners().get("p1") == owner
        started = time.monotonic()
        gone = await client.call_tool("p1__whereami", {})
        took = time.monotonic() - started
        refusal = (gone.meta or {})["switchboard/refusal"]
        assert gone.is_error
        assert refusal["refusal"] == "server-gone", refusal
        assert refusal["server_id"] == "p1"
        assert took < 1.0, took
        facts.append(f"with no owner serving, a tool call was server-gone in {took:.3f} s")
        assert cluster.owners().get("p1") == owner, "the lease ran out before the call"
        # A turn asks the connector too: nothing is added, at once.
        sent = await client.call_tool("agent_send", {"to": "@watcher", "text": "ping"})
        assert not sent.is_error, sent.content
        page, waited = await _turn(client)
        assert _context(page) == {}
        assert waited < 1.0, waited
        facts.append(f"and a turn's context hook added nothing in {waited:.3f} s")

        # Once this instance runs p1 itself, the same tool answers from here.
        async def here() -> bool:
            result = await client.call_tool("p1__whereami", {})
            me = cluster.instances[mine].process.pid  # type: ignore[union-attr]
            return not result.is_error and (result.structured_content or {}).get("ppid") == me

        await eventually_async(here, 30, "p1 failed over to this instance")
        await read(client, wait=0)
    figure("connector tools and context hooks through the owner elsewhere: " + "; ".join(facts))
