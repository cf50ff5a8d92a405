"""What SIGTERM to a loaded ``switchboard run`` costs: seconds, ERROR lines, secrets in the log.

Run: ``python bench/bench_shutdown.py [--rounds N] [--rate R]``.

Each round starts a real ``switchboard run`` (its own process, a fresh store in a temporary
folder) serving two agents over streamable HTTP, each proven by a bearer token, with a status
token set and one stdio connector, ``tests/integration/stream_connector.py``, whose config
carries an ``env`` secret and which streams ``R`` messages a second with four
``channels/incoming`` requests in flight. The stream is ``@busy``'s (it owns default
delivery); ``@idle`` is attached, a real MCP client (the Python SDK) with a long poll open on
an inbox nothing is routed to (``inbox`` with ``wait_seconds = 20``). Once messages flow and
the poll is open, the host is sent SIGTERM.

Per round, in the console format and with ``--log-json``, it prints: the seconds from SIGTERM
to the process's exit, the log's ERROR lines and ``Traceback`` lines, how often each secret
(the two agent tokens, the status token, the connector's ``env`` value) appears in the log,
what the agent's open call got (``answered`` and how, or ``failed`` with the error's type),
and the connector's requests still unanswered when its link closed, with the error reasons it
was given. Linux only.
"""

from __future__ import annotations

import argparse
import logging
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio
import httpx2
import orjson
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

ROOT = Path(__file__).resolve().parents[1]
CONNECTOR = ROOT / "tests" / "integration" / "stream_connector.py"

SECRETS = {
    "busy_token": "busy-agent-token-" + "q7w8e9r0t1y2u3i4",
    "idle_token": "idle-agent-token-" + "a5s6d7f8g9h0j1k2",
    "status_token": "status-operator-" + "z3x4c5v6b7n8m9l0",
    "connector_env": "connector-env-secret-" + "p1o2i3u4y5t6",
}


def _config(folder: Path, rate: float) -> Path:
    command = orjson.dumps(
        [sys.executable, str(CONNECTOR), str(folder / "connector.json"), "--rate", str(rate)]
    ).decode()
    text = f"""log_level = "INFO"
[store]
path = "{folder / "store.sqlite"}"
[agent]
transport = "http"
port = 0
[[agents]]
handle = "@busy"
roles = ["default_delivery"]
token = "${{BUSY_TOKEN}}"
[[agents]]
handle = "@idle"
token = "${{IDLE_TOKEN}}"
[status]
token = "${{STATUS_TOKEN}}"
[[connectors]]
id = "s"
command = {command}
restart = false
env = {{ CONNECTOR_SECRET = "${{CONNECTOR_SECRET}}" }}
"""
    path = folder / "switchboard.toml"
    path.write_text(text)
    return path


def _env() -> dict[str, str]:
    return {
        **os.environ,
        "BUSY_TOKEN": SECRETS["busy_token"],
        "IDLE_TOKEN": SECRETS["idle_token"],
        "STATUS_TOKEN": SECRETS["status_token"],
        "CONNECTOR_SECRET": SECRETS["connector_env"],
    }


class _Log:
    def __init__(self) -> None:
        self.raw = bytearray()

    def text(self) -> str:
        return self.raw.decode("utf-8", "replace")


async def _pump(stream: Any, log: _Log, seen: anyio.Event, marks: dict[str, anyio.Event]) -> None:
    async for chunk in stream:
        tail = bytes(log.raw[-200:]) + chunk
        log.raw.extend(chunk)
        for mark, event in marks.items():
            if mark.encode() in tail:
                event.set()
    seen.set()


async def _agent(url: str, token: str, outcome: dict[str, str]) -> None:
    """One long poll, as the agent's client sees it end."""
    headers = {"Authorization": f"Bearer {token}"}
    try:
        async with (
            httpx2.AsyncClient(timeout=60, headers=headers) as http,
            Client(streamable_http_client(url, http_client=http), mode="legacy") as client,
        ):
            # The client checks each result against the tool's output schema, which it lists
            # first: listed now, before the poll, that is no request made while the host stops.
            await client.list_tools()
            outcome["state"] = "polling"
            started = time.perf_counter()
            result = await client.call_tool("inbox", {"wait_seconds": 20})
            took = time.perf_counter() - started
            data = result.structured_content or {}
            said = "a refusal" if result.is_error else f"{len(data.get('messages', []))} messages"
            outcome["state"] = f"answered after {took:.2f} s with {said}"
    except Exception as exc:
        outcome["state"] += f"; then failed: {type(exc).__name__}"


async def _round(json_log: bool, rate: float, keep: Path | None) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        config = _config(folder, rate)
        options = ["--log-json"] if json_log else []
        command = [sys.executable, "-m", "switchboard", *options, "run", "--config", str(config)]
        log = _Log()
        ended = anyio.Event()
        marks = {"agent_endpoint": anyio.Event(), "streaming": anyio.Event()}
        idle: dict[str, str] = {"state": "not started"}
        async with (
            await anyio.open_process(
                command, env=_env(), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL
            ) as process,
            anyio.create_task_group() as group,
        ):
            group.start_soon(_pump, process.stderr, log, ended, marks)
            with anyio.fail_after(60):
                await marks["agent_endpoint"].wait()
                await marks["streaming"].wait()
            found = re.search(r"(http://[^\s\"']+/mcp)", log.text())
            assert found is not None, "no agent_endpoint url in the log"
            url = found.group(1)
            group.start_soon(_agent, url, SECRETS["idle_token"], idle)
            try:
                with anyio.fail_after(60):
                    while idle["state"] != "polling":
                        await anyio.sleep(0.05)
            except TimeoutError:
                process.kill()
                raise SystemExit(f"the agent did not start: {idle}") from None
            await anyio.sleep(0.5)  # the idle agent's long poll is open; messages flow
            signalled = time.perf_counter()
            process.send_signal(signal.SIGTERM)
            with anyio.fail_after(60):
                code = await process.wait()
            seconds = time.perf_counter() - signalled
            with anyio.fail_after(30):
                await ended.wait()
            await anyio.sleep(0.2)  # the clients see the end of their streams
            group.cancel_scope.cancel()
        text = log.text()
        if keep is not None:
            keep.mkdir(parents=True, exist_ok=True)
            (keep / f"{'json' if json_log else 'console'}-{time.time_ns()}.log").write_text(text)
        lines = text.splitlines()
        connector = folder / "connector.json"
        told = orjson.loads(connector.read_bytes()) if connector.exists() else {}
        return {
            "format": "json" if json_log else "console",
            "exit_code": code,
            "seconds": seconds,
            "error_lines": sum(
                1 for line in lines if "[error" in line or '"level": "error"' in line
            ),
            "traceback_lines": sum(1 for line in lines if "Traceback" in line),
            "secrets": {name: text.count(value) for name, value in SECRETS.items()},
            "idle": idle["state"],
            "connector_unanswered": told.get("unanswered"),
            "connector_reasons": sorted(told.get("reasons", {})),
            "log_lines": len(lines),
        }


async def main() -> None:
    # The clients' own lines ("Session termination failed" when the host is gone) are not
    # the figure.
    logging.getLogger("mcp").setLevel(logging.CRITICAL)
    p = argparse.ArgumentParser()
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--rate", type=float, default=2000.0)
    p.add_argument("--keep-logs", type=Path, default=None, help="write each round's log here")
    args = p.parse_args()
    totals: dict[str, int] = dict.fromkeys(SECRETS, 0)
    for json_log in (False, True):
        for n in range(args.rounds):
            r = await _round(json_log, args.rate, args.keep_logs)
            for name, count in r["secrets"].items():
                totals[name] += count
            print(
                f"{r['format']:<7} round {n + 1}: exit {r['exit_code']} after "
                f"{r['seconds']:.2f} s; ERROR lines {r['error_lines']}, Traceback lines "
                f"{r['traceback_lines']}, log lines {r['log_lines']}; secrets in the log "
                f"{r['secrets']}"
            )
            print(f"    @idle's long poll: {r['idle']}")
            print(
                f"    connector: {r['connector_unanswered']} requests unanswered when its link "
                f"closed; error reasons given: {r['connector_reasons']}"
            )
    print(f"secrets in all logs: {totals} (total {sum(totals.values())})")


if __name__ == "__main__":
    anyio.run(main)
