"""A running ``switchboard run`` with its status surface, for the status tests.

:func:`running_host` starts ``switchboard run`` as a real subprocess with a real store file and
the file-steered connector (tests/integration/status_connector.py) as its real stdio child,
finds the status URL in its log, and yields a :class:`Host`: an HTTP client for the status
surface, a way to make the connector say something (:meth:`Host.say`), and a wait for a
``/status`` snapshot that satisfies a predicate, read from the live ``/status/events`` stream
(no sleeps, no polling).
"""

from __future__ import annotations

import json
import os
import re
import sys
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import httpx2
from anyio.abc import Process

HERE = Path(__file__).parent
TOKEN = "operator-" + "t" * 24

Snapshot = dict[str, Any]


def write_config(
    tmp_path: Path,
    *,
    token: str | None = None,
    status_port: int | None = 0,
    agent_http_port: int | None = None,
    agent_token: str | None = None,
    status_extra: tuple[str, ...] = (),
    backoff: float = 0.2,
) -> Path:
    """A config for the steered connector; ``status_port`` None: no own status listener."""
    inbox = tmp_path / "inbox"
    inbox.mkdir(exist_ok=True)
    command = [sys.executable, str(HERE / "status_connector.py")]
    lines = [
        'log_level = "INFO"',
        "[store]",
        f'path = "{tmp_path / "store.sqlite"}"',
        "[agent]",
    ]
    if agent_http_port is None:
        lines.append('transport = "none"')
    else:
        lines += ['transport = "http"', f"port = {agent_http_port}"]
        if agent_token is not None:
            lines.append(f'token = "{agent_token}"')
    lines.append("[status]")
    lines += status_extra
    if status_port is not None:
        lines.append(f"port = {status_port}")
    if token is not None:
        lines.append('token = "${STATUS_TOKEN}"')
    lines += [
        "[[connectors]]",
        'id = "steered"',
        f"command = {json.dumps(command)}",
        f"backoff_initial = {backoff}",
        f"backoff_max = {backoff}",
        f'env = {{ STATUS_INBOX = "{inbox}" }}',
    ]
    path = tmp_path / "switchboard.toml"
    path.write_text("\n".join(lines) + "\n")
    return path


@dataclass
class Host:
    """One running ``switchboard run`` and its status surface."""

    process: Process
    base: str
    client: httpx2.AsyncClient
    inbox: Path
    stderr: list[str]
    _said: int = 0

    def say(self, channel: str, author: str, text: str) -> None:
        """Make the connector send one message (a refused one when ``channel`` is unknown)."""
        self._said += 1
        part = self.inbox / f"{self._said:06d}.part"
        part.write_text(json.dumps({"channel": channel, "author": author, "text": text}))
        part.rename(part.with_suffix(".json"))

    async def status(self) -> Snapshot:
        answer = await self.client.get("/status")
        assert answer.status_code == 200, answer.text
        body: Snapshot = answer.json()
        return body

    async def wait_for(self, predicate: Callable[[Snapshot], bool], within: float = 30) -> Snapshot:
        """The first snapshot on ``/status/events`` that satisfies ``predicate``."""
        last: Snapshot = {}
        try:
            with anyio.fail_after(within):
                async with self.client.stream("GET", "/status/events") as stream:
                    async for line in stream.aiter_lines():
                        if line.startswith("data:"):
                            last = json.loads(line[5:])
                            if predicate(last):
                                return last
        except TimeoutError:
            raise AssertionError(f"no snapshot matched within {within} s; last: {last}") from None
        raise AssertionError("the event stream ended")


def connector_of(snap: Snapshot, cid: str = "steered") -> dict[str, Any]:
    """The row of connector ``cid`` in a snapshot."""
    rows: list[dict[str, Any]] = [c for c in snap["connectors"] if c["id"] == cid]
    assert rows, snap["connectors"]
    return rows[0]


@asynccontextmanager
async def running_host(
    config: Path,
    *,
    token: str | None = None,
    url_event: str = "status_endpoint",
    env: Mapping[str, str] | None = None,
) -> AsyncIterator[Host]:
    """Run ``switchboard run --config config`` (with ``env`` added to this process's
    environment) until the block ends (then SIGTERM it)."""
    env = {**os.environ, "STATUS_TOKEN": token or "", **(env or {})}
    command = [sys.executable, "-m", "switchboard", "run", "--config", str(config)]
    async with await anyio.open_process(command, env=env) as process:
        assert process.stderr is not None
        stderr = process.stderr
        seen: list[str] = []
        text = ""
        with anyio.fail_after(30):
            while (found := re.search(url_event + r" .*url=(\S+)/status", text)) is None:
                chunk = (await stderr.receive()).decode()
                seen.append(chunk)
                text += chunk
        base = found.group(1)

        async def drain() -> None:
            async for chunk in stderr:
                seen.append(chunk.decode())

        headers = {} if token is None else {"Authorization": f"Bearer {token}"}
        async with (
            httpx2.AsyncClient(base_url=base, headers=headers, timeout=30) as client,
            anyio.create_task_group() as group,
        ):
            group.start_soon(drain)
            try:
                yield Host(process, base, client, config.parent / "inbox", seen)
            finally:
                if process.returncode is None:
                    process.terminate()
                with anyio.fail_after(30):
                    await process.wait()
                group.cancel_scope.cancel()
