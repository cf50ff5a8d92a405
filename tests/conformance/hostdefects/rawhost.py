"""A minimal raw MCPL host (threads, standard library only), correct unless told to break one rule.

It spawns the connector argv it is given, runs the handshake (``initialize``, then the
``featureSets/update`` Request granting the advertised channel leaves and ``pushEvents``; a
connector without ``experimental.mcpl`` stays plain MCP), and answers what the connector
sends: ``ping``, ``channels/register`` and ``channels/changed`` (Request or Notification, item
by item), ``channels/list``, ``channels/incoming`` (per message, registered channels only),
``push/event`` (feature sets checked, errors with the documented codes), ``-32002`` for
anything privileged before the receipt or outside the grant, ``-32601`` for unknown methods.
It "replies" to each admitted message by publishing an echo (streamed first when the
connector advertised and was granted ``channels.streaming``), and follows manifest changes
(:mod:`.rawmanifest`). Junk lines are skipped. It knows nothing of the kit; the defects are
switched on by :class:`Defects`. Messages are read and answered on one reader thread;
anything that waits for an answer (the handshake, a publish, a manifest fetch) runs on its own
thread, so it starts in a few milliseconds (many of these hosts run per test).
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import IO, Any

from tests.conformance.hostdefects.rawgrant import (
    descriptor_problem,
    enabled,
    feature_sets,
    granted,
)
from tests.conformance.hostdefects.rawmanifest import ManifestFollower

_GATES = {
    "channels/register": "channels.register",
    "channels/changed": "channels.register",
    "channels/list": "channels.register",
    "channels/incoming": "channels.incoming",
    "push/event": "pushEvents",
    "model/info": "modelInfo",
    "inference/request": "inferenceRequest",
}


@dataclass(frozen=True, slots=True)
class Defects:
    """Which rule to break (all off: a conforming host)."""

    policy_as_notification: bool = False
    register_before_policy: bool = False
    register_result_empty: bool = False
    list_never_answered: bool = False
    incoming_first_result_only: bool = False
    manifest_not_fetched: bool = False
    manifest_additions_granted: bool = False
    manifest_fetch_unbounded: bool = False
    manifest_revision_trusted: bool = False
    manifest_garbage_drops_mcpl: bool = False
    manifest_digest_enforced: bool = False


def _error(code: int, message: str, **data: Any) -> dict[str, Any]:
    return {"error": {"code": code, "message": message, "data": data}}


class Waiter:
    """One outstanding request's answer, handed from the reader thread to the one waiting."""

    def __init__(self) -> None:
        self._event = threading.Event()
        self.response: dict[str, Any] = {}

    def settle(self, response: dict[str, Any]) -> None:
        self.response = response
        self._event.set()

    def wait(self) -> dict[str, Any]:
        self._event.wait()
        return self.response


class RawHost:
    """One connection to one connector, served over its stdin/stdout."""

    def __init__(self, defects: Defects) -> None:
        self.defects = defects
        self.grant: set[str] = set()
        self.enabled: set[str] = set()
        self.manifest: dict[str, Any] | None = None
        self.ready = False
        self.channels: dict[str, Any] = {}
        self.next_id = 0
        self.waiting: dict[int, Waiter] = {}
        self.on_response: dict[int, Callable[[dict[str, Any]], None]] = {}
        self.writer: IO[bytes] | None = None
        self.lock = threading.Lock()
        self.manifests = ManifestFollower(self)

    # -- wire --------------------------------------------------------------------------------

    def send(self, message: dict[str, Any]) -> None:
        assert self.writer is not None
        frame = json.dumps({"jsonrpc": "2.0", **message}).encode() + b"\n"
        with self.lock:
            try:
                self.writer.write(frame)
                self.writer.flush()
            except (BrokenPipeError, ValueError):
                pass  # the connector is gone; the reader ends the host

    def request(
        self,
        method: str,
        params: Any,
        on_response: Callable[[dict[str, Any]], None] | None = None,
    ) -> dict[str, Any]:
        """Send a request and wait for its response (never on the reader thread).

        ``on_response`` runs on the reader thread, before the next message is read.
        """
        waiter = Waiter()
        with self.lock:
            self.next_id += 1
            ident = self.next_id
            self.waiting[ident] = waiter
            if on_response is not None:
                self.on_response[ident] = on_response
        self.send({"id": ident, "method": method, "params": params})
        return waiter.wait()

    def spawn(self, work: Callable[..., Any], *args: Any) -> None:
        threading.Thread(target=work, args=args, daemon=True).start()

    # -- policy ------------------------------------------------------------------------------

    def policy_params(self) -> dict[str, Any]:
        sets = feature_sets(self.manifest)
        return {
            "effectiveCapabilities": sorted(self.grant),
            "enabled": sorted(self.enabled),
            "disabled": sorted(set(sets) - self.enabled),
        }

    def read_receipt(self, response: dict[str, Any]) -> None:
        if (response.get("result") or {}).get("accepted") is not True:
            self.ready, self.grant, self.enabled = False, set(), set()

    # -- answering ---------------------------------------------------------------------------

    def answer(self, method: str, params: Any) -> dict[str, Any]:
        gate = _GATES.get(method)
        if (
            gate is not None
            and not (method == "channels/register" and self.defects.register_before_policy)
            and (not self.ready or gate not in self.grant)
        ):
            return _error(-32002, f"capability {gate} not granted", capability=gate)
        params = params if isinstance(params, dict) else {}
        if method == "ping":
            return {"result": {}}
        if method == "channels/register":
            results = [self._add(d) for d in params.get("channels", [])]
            if self.defects.register_result_empty:
                return {"result": {}}
            return {"result": {"results": results}}
        if method == "channels/changed":
            return {"result": {"results": self._changed(params)}}
        if method == "channels/list":
            return {"result": {"channels": list(self.channels.values())}}
        if method == "channels/incoming":
            return {"result": {"results": self._incoming(params)}}
        if method == "push/event":
            return self._push(params)
        return {"error": {"code": -32601, "message": f"Method not found: {method}"}}

    def _push(self, params: dict[str, Any]) -> dict[str, Any]:
        name = params.get("featureSet")
        sets = feature_sets(self.manifest)
        if name not in sets:
            return _error(-32003, "Unknown feature set", featureSet=name)
        if name not in self.enabled:
            return _error(-32001, "Feature set not enabled", featureSet=name)
        if "pushEvents" not in (sets[name] or []):
            return _error(-32002, "declaration mismatch", capability="pushEvents")
        return {"result": {"accepted": True}}

    def _add(self, item: Any) -> dict[str, Any]:
        problem = descriptor_problem(item)
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

    def _changed(self, params: dict[str, Any]) -> list[dict[str, Any]]:
        results = [self._update(d) for d in params.get("updated", [])]
        return results + [self._add(d) for d in params.get("added", [])]

    def _incoming(self, params: dict[str, Any]) -> list[dict[str, Any]]:
        results = []
        for m in params.get("messages", []):
            mid = m.get("messageId") if isinstance(m, dict) else None
            known = isinstance(m, dict) and m.get("channelId") in self.channels
            item: dict[str, Any] = {"messageId": mid, "accepted": known}
            if known:
                self.spawn(self._echo, m)
            else:
                item["reason"] = "unknown channel"
            results.append(item)
        return results[:1] if self.defects.incoming_first_result_only else results

    def _echo(self, message: dict[str, Any]) -> None:
        """The raw host's "agent": publish an echo, streamed first when granted."""
        channel = message["channelId"]
        if "channels.publish" not in self.grant:
            return
        text = "echo: " + "".join(
            str(b.get("text", "")) for b in message.get("content", []) if isinstance(b, dict)
        )
        content = [{"type": "text", "text": text}]
        if "channels.streaming" in self.grant:
            head = {
                "inferenceId": f"raw-{message.get('messageId')}",
                "conversationId": "c",
                "channelId": channel,
            }
            parts = [text[: len(text) // 2], text[len(text) // 2 :]]
            for index, delta in enumerate(parts):
                chunk = {**head, "index": index, "delta": delta}
                self.send({"method": "channels/outgoing/chunk", "params": chunk})
            complete = {**head, "content": content}
            self.send({"method": "channels/outgoing/complete", "params": complete})
        publish = {"conversationId": "c", "channelId": channel, "content": content}
        self.request("channels/publish", publish)

    def notification(self, method: str, params: Any) -> None:
        if method == "channels/changed" and self.ready and "channels.register" in self.grant:
            self._changed(params if isinstance(params, dict) else {})
        elif method == "mcpl/manifestChanged" and self.ready:
            self.manifests.announced(params)

    def dispatch(self, message: dict[str, Any]) -> None:
        method = message.get("method")
        if not isinstance(method, str):
            ident = message.get("id")
            callback = self.on_response.pop(ident, None)  # type: ignore[arg-type]
            if callback is not None:
                callback(message)
            waiter = self.waiting.pop(ident, None)  # type: ignore[arg-type]
            if waiter is not None:
                waiter.settle(message)
            return
        if "id" not in message:
            self.notification(method, message.get("params"))
            return
        if method == "channels/list" and self.defects.list_never_answered:
            # Said on stderr, where a host's logs go: a failed check shows the tail of it.
            sys.stderr.write(f"rawhost: channels/list {message['id']!r} left unanswered\n")
            sys.stderr.flush()
            return
        self.send({"id": message["id"], **self.answer(method, message.get("params"))})

    def read(self, reader: IO[bytes]) -> None:
        for line in reader:
            try:
                message = json.loads(line)
            except ValueError:
                continue
            if isinstance(message, dict):
                try:
                    self.dispatch(message)
                except (TypeError, AttributeError, KeyError):
                    continue
        for waiter in list(self.waiting.values()):
            waiter.settle({})  # the connection is over: nobody waits forever

    def handshake(self) -> None:
        init = self.request(
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
        if not isinstance(mcpl, dict):
            return  # a plain MCP server: no MCPL at all
        self.manifest = mcpl
        grant = granted(mcpl)
        sets = enabled(feature_sets(mcpl), grant)
        if self.defects.policy_as_notification:
            self.grant, self.enabled, self.ready = grant, sets, True
            self.send({"method": "featureSets/update", "params": self.policy_params()})
            return
        self.grant, self.enabled = grant, sets
        params = self.policy_params()
        self.grant, self.enabled = set(), set()

        def receipt(response: dict[str, Any]) -> None:
            if (response.get("result") or {}).get("accepted") is True:
                self.grant, self.enabled, self.ready = grant, sets, True

        self.request("featureSets/update", params, on_response=receipt)


def run(defects: Defects) -> None:
    """Serve the connector named by this program's arguments, with ``defects``."""
    process = subprocess.Popen(sys.argv[1:], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert process.stdin is not None
    assert process.stdout is not None
    host = RawHost(defects)
    host.writer = process.stdin
    reader = threading.Thread(target=host.read, args=(process.stdout,), daemon=True)
    reader.start()
    host.spawn(host.handshake)
    reader.join()


if __name__ == "__main__":
    run(Defects())
