"""What answering a connector's ``inference/request`` through an agent's sampling costs.

Run: ``python bench/bench_inference.py [--requests N]``. One run builds a Switchboard with one
connector on an in-memory link (a transport ``Peer`` that advertises ``inferenceRequest``) and
one agent attached in process through the MCP SDK (``Client(..., mode="legacy")``) whose
sampling callback answers at once, so what is measured is Switchboard and the SDK, not a model.
It prints, each as the median of five interleaved rounds of N sequential requests:

- **ping**: the connector's ``ping`` answered by the host (the link's round trip alone);
- **sampling**: ``sampling/createMessage`` on the agent's session, asked directly (the MCP
  hop alone: the SDK's server session, memory streams, the client's callback);
- **inference**: the connector's ``inference/request`` answered through that sampling (checks,
  the cap, the timeout, the Deferred answer, the mapping both ways);
- **inference, streamed**: the same with ``stream: true`` (one chunk before the answer);

and the ratios inference/sampling (the MCPL side's overhead over the hop it needs anyway) and
inference/ping.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
from mcp import Client
from mcp.types import CreateMessageRequestParams, CreateMessageResult, TextContent

from switchboard.app.board import Switchboard, build_server
from switchboard.config import AgentConfig, Config, ConnectorConfig, StoreConfig
from switchboard.connections.inference import InferenceAsk, InferenceMessage
from switchboard.runtime.logs import configure
from switchboard.store.sqlite import MessageStore
from switchboard.transport import Peer, memory_link_pair

ROUNDS = 5
MANIFEST = {
    "version": "0.5",
    "inferenceRequest": {"streaming": True},
    "featureSets": {"mem": {"description": "bench", "uses": ["inferenceRequest"]}},
}
ASK = {"featureSet": "mem", "messages": [{"role": "user", "content": "hello"}]}


async def connector(method: str, params: Any) -> Any:
    if method == "initialize":
        return {
            "protocolVersion": params["protocolVersion"],
            "serverInfo": {"name": "bench", "version": "0"},
            "capabilities": {"experimental": {"mcpl": MANIFEST}},
        }
    return {"accepted": True}


async def model(context: Any, params: CreateMessageRequestParams) -> CreateMessageResult:
    return CreateMessageResult(
        role="assistant", content=TextContent(type="text", text="hi"), model="bench-model"
    )


async def timed(n: int, once: Callable[[], Awaitable[Any]]) -> float:
    """Microseconds per call of ``once``, over ``n`` sequential calls."""
    start = time.perf_counter()
    for _ in range(n):
        await once()
    return (time.perf_counter() - start) / n * 1e6


async def main(n: int) -> None:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "bench.sqlite"
        cc = ConnectorConfig(id="c", command=["unused"], max_inference_requests=4)
        config = Config(connectors=[cc], store=StoreConfig(path=str(path)), agent=AgentConfig())
        store = await MessageStore.open(path)
        board = Switchboard(config, store)
        host_link, connector_link = memory_link_pair()
        peer = Peer(connector_link, on_request=connector, name="bench-connector")
        try:
            async with anyio.create_task_group() as tg:
                tg.start_soon(peer.run)
                tg.start_soon(board.serve_link, cc, host_link)
                while "c" not in board.sessions:
                    await anyio.sleep(0.01)
                await board.sessions["c"].wait_ready()
                async with Client(
                    build_server(board, agent="agent"), mode="legacy", sampling_callback=model
                ):
                    ask = InferenceAsk("c", "mem", (InferenceMessage("user", ()),), None, 16)
                    cases: dict[str, Callable[[], Awaitable[Any]]] = {
                        "ping": lambda: peer.request("ping", {}),
                        "sampling": lambda: board.samplers.infer("agent", ask),
                        "inference": lambda: peer.request("inference/request", ASK),
                        "inference, streamed": lambda: peer.request(
                            "inference/request", {**ASK, "stream": True}
                        ),
                    }
                    for once in cases.values():  # warm up every path
                        await timed(20, once)
                    rounds: dict[str, list[float]] = {name: [] for name in cases}
                    for _ in range(ROUNDS):
                        for name, once in cases.items():
                            rounds[name].append(await timed(n, once))
                tg.cancel_scope.cancel()
        finally:
            await store.aclose()
    median = {name: statistics.median(values) for name, values in rounds.items()}
    print(f"{n} sequential requests per round, median of {ROUNDS} interleaved rounds:")
    for name, us in median.items():
        spread = f"{min(rounds[name]):.0f}-{max(rounds[name]):.0f}"
        print(f"  {name:<20} {us:8.0f} µs/request  ({1e6 / us:7.0f}/s; rounds {spread} µs)")
    print(f"  inference / sampling: {median['inference'] / median['sampling']:.2f}x")
    print(f"  inference / ping:     {median['inference'] / median['ping']:.2f}x")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=300)
    configure("WARNING")
    anyio.run(main, parser.parse_args().requests)
