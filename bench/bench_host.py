"""Benchmark: incoming messages and confirmed publishes through one stdio connector.

Measures, in ONE run, on this machine:

* incoming messages/s through Switchboard into the durable SQLite store (batches of 50; one
  and sixteen requests in flight), beside a bare JSON-RPC loop over stdio that parses each
  request and answers it without validating or storing anything;
* confirmed publishes/s (32 in flight) through ``board.publisher.publish``, beside a bare loop
  sending the same ``channels/publish`` requests.

Both sides drive the same connector program (``bench_connector.py``), so the ratio is the cost
of Switchboard itself. Run: ``python bench/bench_host.py [--requests N] [--publishes N]``.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio
import orjson

from baseline_loop import answer_everything
from switchboard.app.board import Switchboard
from switchboard.config import Config, ConnectorConfig, StoreConfig
from switchboard.connections.session import SessionState
from switchboard.refusals.outcome import PublishStatus
from switchboard.runtime.logs import configure

CONNECTOR = str(Path(__file__).with_name("bench_connector.py"))
BATCH = 50


async def _wait_file(path: Path, timeout: float = 300.0) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if path.exists() and path.stat().st_size:
            return path.read_text()
        await anyio.sleep(0.005)
    raise TimeoutError(f"{path} never appeared")


# -- the bare loop --------------------------------------------------------------------------


async def bare(mode: str, total: int, window: int, out: Path) -> float:
    """Drive the connector with a bare asyncio JSON-RPC loop; returns items per second."""
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        CONNECTOR,
        mode,
        str(total if mode == "incoming" else 0),
        str(window),
        str(BATCH),
        str(out),
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        limit=1 << 26,
    )
    assert proc.stdin and proc.stdout
    w, r = proc.stdin, proc.stdout
    registered = asyncio.Event()
    answers: dict[int, asyncio.Future[Any]] = {}

    def send(obj: dict[str, Any]) -> None:
        w.write(orjson.dumps(obj) + b"\n")

    async def read() -> None:
        await answer_everything(r, orjson.loads, send, answers, registered)

    reading = asyncio.create_task(read())
    loop = asyncio.get_running_loop()

    async def call(i: int, method: str, params: dict[str, Any]) -> Any:
        fut: asyncio.Future[Any] = loop.create_future()
        answers[i] = fut
        send({"jsonrpc": "2.0", "id": i, "method": method, "params": params})
        return await fut

    await call(1, "initialize", {"protocolVersion": "2025-06-18", "capabilities": {}})
    send({"jsonrpc": "2.0", "method": "notifications/initialized"})
    await call(
        2,
        "featureSets/update",
        {"effectiveCapabilities": ["channels.register", "channels.incoming", "channels.publish"]},
    )
    await registered.wait()
    rate: float
    if mode == "incoming":
        result = orjson.loads(await _wait_file(out))
        rate = result["messages"] / result["seconds"]
    else:
        await _wait_file(out)
        next_id = [100]
        started = time.perf_counter()

        async def worker(n: int) -> None:
            for _ in range(n):
                next_id[0] += 1
                reply = await call(
                    next_id[0],
                    "channels/publish",
                    {
                        "conversationId": "",
                        "channelId": "bench:c",
                        "content": [{"type": "text", "text": "hello"}],
                    },
                )
                assert reply["result"]["delivered"] is True

        await asyncio.gather(*(worker(total // window) for _ in range(window)))
        rate = (total // window * window) / (time.perf_counter() - started)
    w.close()
    reading.cancel()
    await proc.wait()
    return rate


# -- through Switchboard --------------------------------------------------------------------


def _config(tmp: Path, mode: str, total: int, window: int, out: Path) -> Config:
    argv = [sys.executable, CONNECTOR, mode, str(total), str(window), str(BATCH), str(out)]
    return Config(
        connectors=[ConnectorConfig(id="bench", command=argv, restart=False)],
        store=StoreConfig(path=str(tmp / "bench.sqlite"), synchronous="normal"),
    )


async def through_switchboard(mode: str, total: int, window: int, tmp: Path, out: Path) -> float:
    config = _config(tmp, mode, total if mode == "incoming" else 0, window, out)
    async with Switchboard.started(config) as board:
        if mode == "incoming":
            result = orjson.loads(await _wait_file(out))
            assert board.store.latest_seq >= result["messages"], "not everything was stored"
            return float(result["messages"] / result["seconds"])
        await _wait_file(out)
        while (
            board.sessions.get("bench") is None
            or board.sessions["bench"].state is not SessionState.READY
        ):
            await anyio.sleep(0.005)
        per = total // window
        started = time.perf_counter()

        async def worker() -> None:
            for _ in range(per):
                outcome = await board.publisher.publish("bench:c", "hello", server_id="bench")
                assert outcome.status is PublishStatus.DELIVERED, outcome

        async with anyio.create_task_group() as tg:
            for _ in range(window):
                tg.start_soon(worker)
        return per * window / (time.perf_counter() - started)


async def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument(
        "--requests", type=int, default=2000, help="incoming requests per run (x50 messages)"
    )
    p.add_argument("--publishes", type=int, default=20000, help="publishes per run")
    args = p.parse_args()
    configure("ERROR")
    rows: list[tuple[str, float, float, float | None]] = []
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        n = 0

        def fresh() -> Path:
            nonlocal n
            n += 1
            sub = tmp / f"run{n}"
            sub.mkdir()
            return sub

        for window, target in ((1, 200_000.0), (16, 380_000.0)):
            sub = fresh()
            base = await bare("incoming", args.requests, window, sub / "bare.json")
            ours = await through_switchboard(
                "incoming", args.requests, window, sub, sub / "sb.json"
            )
            rows.append((f"incoming msgs/s, {window} in flight", ours, base, target))
        sub = fresh()
        base = await bare("publish", args.publishes, 32, sub / "bare.txt")
        ours = await through_switchboard("publish", args.publishes, 32, sub, sub / "sb.txt")
        rows.append(("confirmed publishes/s, 32 in flight", ours, base, None))
    print(f"{'measure':40} {'switchboard':>12} {'bare loop':>12} {'ratio':>7}  target")
    for name, ours, base, goal in rows:
        ratio = ours / base
        goals = ["ratio >= 0.50 " + ("met" if ratio >= 0.5 else "NOT MET")]
        if goal is not None:
            goals.append(f">= {goal:,.0f} " + ("met" if ours >= goal else "NOT MET"))
        print(f"{name:40} {ours:12,.0f} {base:12,.0f} {ratio:7.2f}  {'; '.join(goals)}")


if __name__ == "__main__":
    asyncio.run(main())
