"""A minimal raw-asyncio MCPL host, correct unless told to break one rule.

It spawns the connector argv it is given, runs the handshake (``initialize``, then the
``featureSets/update`` Request granting what the connector advertised), and answers what the
connector sends: ``ping``, ``channels/register``, ``channels/changed``, ``channels/list``,
``channels/incoming`` (per message, registered channels only), and ``-32002`` for anything
privileged before the receipt or outside the grant, ``-32601`` for unknown methods. Junk
lines are skipped. It knows nothing of the kit; the defects are switched on by
:class:`Defects`.
"""

from __future__ import annotations

import asyncio
import json
import sys
from dataclasses import dataclass
from typing import Any

_GATES = {
    "channels/register": "channels.register",
    "channels/changed": "channels.register",
    "channels/list": "channels.register",
    "channels/incoming": "channels.incoming",
    "push/event": "pushEvents",
}
_DIRECTIONS = {"inbound", "outbound", "bidirectional"}


@dataclass(frozen=True, slots=True)
class Defects:
    """Which rule to break (all off: a conforming host)."""

    policy_as_notification: bool = False
    register_before_policy: bool = False
    register_result_empty: bool = False
    list_never_answered: bool = False


def _granted(advertised: Any) -> list[str]:
    mcpl = advertised if isinstance(advertised, dict) else {}
    paths: list[str] = []
    channels = mcpl.get("channels")
    if isinstance(channels, dict):
        paths += [f"channels.{k}" for k, v in channels.items() if v is True]
    if mcpl.get("pushEvents") is True:
        paths.append("pushEvents")
    return sorted(paths)


def _descriptor_problem(item: Any) -> str | None:
    if not isinstance(item, dict) or not isinstance(item.get("id"), str):
        return "malformed: no id"
    if not isinstance(item.get("type"), str) or not isinstance(item.get("label"), str):
        return "malformed: type and label are required"
    if item.get("direction") not in _DIRECTIONS:
        return "malformed: bad direction"
    return None


class RawHost:
    """One connection to one connector, served over its stdin/stdout."""

    def __init__(self, defects: Defects) -> None:
        self.defects = defects
        self.grant: set[str] = set()
        self.ready = False
        self.channels: dict[str, Any] = {}
        self.next_id = 0
        self.waiting: dict[int, asyncio.Future[Any]] = {}
        self.writer: asyncio.StreamWriter | None = None

    def send(self, message: dict[str, Any]) -> None:
        assert self.writer is not None
        self.writer.write(json.dumps({"jsonrpc": "2.0", **message}).encode() + b"\n")

    async def request(self, method: str, params: Any) -> Any:
        self.next_id += 1
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self.waiting[self.next_id] = future
        self.send({"id": self.next_id, "method": method, "params": params})
        return await future

    def answer(self, method: str, params: Any) -> dict[str, Any]:
        gate = _GATES.get(method)
        if (
            gate is not None
            and not (method == "channels/register" and self.defects.register_before_policy)
            and (not self.ready or gate not in self.grant)
        ):
            message = f"capability {gate} not granted"
            return {"error": {"code": -32002, "message": message, "data": {"capability": gate}}}
        params = params if isinstance(params, dict) else {}
        if method == "ping":
            return {"result": {}}
        if method == "channels/register":
            results = [self._add(d) for d in params.get("channels", [])]
            if self.defects.register_result_empty:
                return {"result": {}}
            return {"result": {"results": results}}
        if method == "channels/changed":
            updated = [self._update(d) for d in params.get("updated", [])]
            return {"result": {"results": updated}}
        if method == "channels/list":
            return {"result": {"channels": list(self.channels.values())}}
        if method == "channels/incoming":
            results = []
            for m in params.get("messages", []):
                mid = m.get("messageId") if isinstance(m, dict) else None
                known = isinstance(m, dict) and m.get("channelId") in self.channels
                item: dict[str, Any] = {"messageId": mid, "accepted": known}
                if not known:
                    item["reason"] = "unknown channel"
                results.append(item)
            return {"result": {"results": results}}
        return {"error": {"code": -32601, "message": f"Method not found: {method}"}}

    def _add(self, item: Any) -> dict[str, Any]:
        problem = _descriptor_problem(item)
        cid = item.get("id") if isinstance(item, dict) else None
        if problem is not None or not isinstance(cid, str):
            return {"id": cid, "accepted": False, "reason": problem}
        self.channels[cid] = item
        return {"id": cid, "accepted": True}

    def _update(self, item: Any) -> dict[str, Any]:
        cid = item.get("id") if isinstance(item, dict) else None
        if cid not in self.channels:
            return {"id": cid, "accepted": False, "reason": "unknown channel"}
        return self._add(item)

    def dispatch(self, message: dict[str, Any]) -> None:
        method = message.get("method")
        if not isinstance(method, str):
            future = self.waiting.pop(message.get("id"), None)  # type: ignore[arg-type]
            if future is not None and not future.done():
                future.set_result(message)
            return
        if "id" not in message:
            return
        if method == "channels/list" and self.defects.list_never_answered:
            return
        self.send({"id": message["id"], **self.answer(method, message.get("params"))})

    async def read(self, reader: asyncio.StreamReader) -> None:
        while line := await reader.readline():
            try:
                message = json.loads(line)
            except ValueError:
                continue
            if isinstance(message, dict):
                try:
                    self.dispatch(message)
                except (TypeError, AttributeError):
                    continue

    async def handshake(self) -> None:
        init = await self.request(
            "initialize",
            {
                "protocolVersion": "2025-06-18",
                "capabilities": {"experimental": {"mcpl": {"version": "0.5", "channels": True}}},
                "clientInfo": {"name": "rawhost", "version": "0"},
            },
        )
        result = init.get("result") or {}
        mcpl = result.get("capabilities", {}).get("experimental", {}).get("mcpl")
        self.send({"method": "notifications/initialized", "params": {}})
        grant = _granted(mcpl)
        params = {"effectiveCapabilities": grant, "enabled": [], "disabled": []}
        if self.defects.policy_as_notification:
            self.send({"method": "featureSets/update", "params": params})
            self.grant, self.ready = set(grant), True
            return
        receipt = await self.request("featureSets/update", params)
        if (receipt.get("result") or {}).get("accepted") is True:
            self.grant, self.ready = set(grant), True


async def _serve(argv: list[str], defects: Defects) -> None:
    process = await asyncio.create_subprocess_exec(
        *argv, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE
    )
    assert process.stdin is not None
    assert process.stdout is not None
    host = RawHost(defects)
    host.writer = process.stdin
    reading = asyncio.create_task(host.read(process.stdout))
    await host.handshake()
    await reading


def run(defects: Defects) -> None:
    """Serve the connector named by this program's arguments, with ``defects``."""
    asyncio.run(_serve(sys.argv[1:], defects))


if __name__ == "__main__":
    run(Defects())
