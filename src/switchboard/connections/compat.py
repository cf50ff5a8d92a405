"""Compatibility with pre-0.5 connectors: who is one, how its manifest is read, what is held.

Under the ``compat`` setting a connector whose advertisement speaks the 0.4 dialect (or that
answers the policy Request with ``-32601``) is judged by 0.4 rules (docs/compatibility.md): its
manifest is read the 0.4 way (:func:`legacy_reading`), and the privileged messages it sends
before the policy exchange completes are held in order and judged once it does
(:class:`HeldMessages`). The operator's grant still decides what is granted.

What it deliberately does not know: the grant, the handlers, or the wire.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Final, Literal

import anyio

from switchboard.protocol import CAPABILITY_PATHS, Manifest
from switchboard.protocol.featuresets import FeatureSetDecl
from switchboard.runtime.ratelog import RateLimitedLog
from switchboard.transport import Deferred

__all__ = [
    "CHANNEL_LEAVES",
    "HOLD_GRACE",
    "HOLD_LIMIT",
    "CompatMode",
    "HeldMessages",
    "legacy_reading",
    "pre05_reason",
]

CompatMode = Literal["auto", "strict", "lenient"]

HOLD_GRACE: Final = 2.0
"""Seconds a pre-0.5 connector may leave the policy Request unanswered while it has messages
held, before the policy is sent as a Notification and put in force (the session does this)."""

HOLD_LIMIT: Final = 256
"""Most privileged messages held for one connection before its policy exchange completes;
beyond it a message is judged at once (``-32002``), as for a 0.5 connector."""

CHANNEL_LEAVES: Final = frozenset(p for p in CAPABILITY_PATHS if p.startswith("channels."))

_OLD_SET_MEMBERS: Final = ("name", "hostState")


def _version_below_05(version: str | None) -> bool:
    if version is None:
        return True
    head = version.split(".")
    try:
        major, minor = int(head[0]), int(head[1]) if len(head) > 1 else 0
    except ValueError:
        return True
    return (major, minor) < (0, 5)


def pre05_reason(manifest: Manifest, mode: CompatMode) -> str | None:
    """Why ``manifest`` is treated as pre-0.5 under ``mode``, or None when it is not."""
    if mode == "strict":
        return None
    if mode == "lenient":
        return "compat = lenient"
    raw = manifest.raw
    if _version_below_05(manifest.version):
        return f"version {manifest.version!r} is below 0.5"
    sets = raw.get("featureSets")
    if isinstance(sets, list):
        return "featureSets is an array (0.4 shape)"
    if isinstance(raw.get("channels"), bool):
        return "channels is a boolean (0.4 shape)"
    if isinstance(sets, Mapping):
        for name, entry in sets.items():
            if isinstance(entry, Mapping):
                old = [m for m in _OLD_SET_MEMBERS if m in entry]
                if old:
                    return f"feature set {name!r} carries 0.4 members {old}"
    return None


def _channels_advertised(raw: Mapping[str, Any]) -> bool:
    value = raw.get("channels")
    if isinstance(value, Mapping):
        return any(v is not False and v is not None for v in value.values())
    return value is True


def _legacy_set(decl: FeatureSetDecl) -> FeatureSetDecl:
    uses = tuple(u for u in decl.uses if u in CAPABILITY_PATHS)
    return replace(decl, uses=uses, valid=bool(uses))


def legacy_reading(manifest: Manifest) -> Manifest:
    """``manifest`` read by 0.4 rules; a new value, never mutated.

    What it knows (docs/compatibility.md, "Compatibility mode"; peers.md §2-§7):

    - **Who.** :func:`pre05_reason` says why a manifest is pre-0.5 under the connector's ``compat``
      setting: ``strict`` never, ``lenient`` always, ``auto`` when the advertisement speaks the 0.4
      dialect: a version below 0.5 (or none), ``featureSets`` as an array, ``channels`` as a
      boolean, or a ``name``/``hostState`` member inside a record-form set (0.4 members carried into
      a 0.5-shaped record). A ``-32601`` answer to the policy Request is the late signal; the
      session applies it.
    - **How its manifest is read** (:func:`legacy_reading`). 0.4 had no per-leaf channel paths:
      ``channels`` in any truthy shape is the whole channels capability, so it reads as every
      ``channels.*`` leaf. Entries of a set's ``uses`` that are not capability paths
      (``stateUpdate``, ``channels.observe``, ``branches``) confer nothing and are dropped when
      judging the set; a set left with no capability path stays invalid (disabled). The operator's
      grant still decides what is granted.
    - **What is held** (:class:`HeldMessages`). Privileged messages a pre-0.5 connector sends before
      the policy exchange completes are held, in arrival order and at most :data:`HOLD_LIMIT`, and
      judged against the grant once it completes. Once anything is held, later privileged messages
      queue behind it until the queue drains, so order is kept.
    """
    advertised = manifest.advertised
    notes: list[str] = []
    if _channels_advertised(manifest.raw) and not advertised >= CHANNEL_LEAVES:
        advertised = advertised | CHANNEL_LEAVES
        notes.append("compat: channels read as the whole 0.4 channels capability")
    feature_sets = {name: _legacy_set(decl) for name, decl in manifest.feature_sets.items()}
    for name, decl in manifest.feature_sets.items():
        dropped = [u for u in decl.uses if u not in CAPABILITY_PATHS]
        if dropped:
            notes.append(f"compat: feature set {name!r}: non-capability uses ignored {dropped}")
    return replace(
        manifest,
        advertised=advertised,
        feature_sets=feature_sets,
        diagnostics=manifest.diagnostics + tuple(notes),
    )


@dataclass(slots=True)
class _Held:
    method: str
    params: Any
    notification: bool
    done: anyio.Event = field(default_factory=anyio.Event)
    result: Any = None
    error: BaseException | None = None


Judge = Callable[[str, Any, bool], Awaitable[Any]]
"""Judges and handles one message now: (method, params, is_notification) -> the answer."""


class HeldMessages:
    """Privileged messages waiting for the policy exchange, judged in order once it completes.

    Args:
        judge: handles one message as if it arrived now (gate, handler, refusal logging). For a
            notification its value is ignored and it must not raise for a refusal.
        log: the connection's rate-limited log (a connector may send held messages without
            end).
        limit: most messages held at once.
    """

    def __init__(self, judge: Judge, log: RateLimitedLog, *, limit: int = HOLD_LIMIT) -> None:
        self._judge = judge
        self._log = log
        self._limit = limit
        self._queue: deque[_Held] = deque()
        self._released = anyio.Event()
        self._wake = anyio.Event()
        self._draining = False
        self.held_total = 0
        self.first_held = anyio.Event()
        """Set when the first message is held."""

    @property
    def busy(self) -> bool:
        """Whether messages are waiting (a later privileged message must queue behind them)."""
        return bool(self._queue) or self._draining

    @property
    def released(self) -> bool:
        return self._released.is_set()

    def hold(self, method: str, params: Any, *, notification: bool) -> Deferred | None:
        """Queue one message; the answer (for a request) is the returned ``Deferred``.

        Returns None when the queue is full: the caller judges the message at once.
        """
        if len(self._queue) >= self._limit:
            self._log.note(
                ("held_before_policy_limit",),
                "held_before_policy_limit",
                method=method,
                limit=self._limit,
                action="judged now",
            )
            return None
        item = _Held(method, params, notification)
        self._queue.append(item)
        self.held_total += 1
        self.first_held.set()
        if not self._released.is_set():
            self._log.note(
                ("held_until_policy",),
                "held_until_policy",
                level="info",
                method=method,
                held=len(self._queue),
            )
        self._wake.set()

        async def answer() -> Any:
            await item.done.wait()
            if item.error is not None:
                raise item.error
            return item.result

        return Deferred(answer())

    def release(self) -> None:
        """The policy exchange is over (ready, refused or failed): judge what is held."""
        if not self._released.is_set():
            if self._queue:
                self._log.note(
                    ("held_released",), "held_released", level="info", held=len(self._queue)
                )
            self._released.set()
            self._wake.set()

    async def run(self) -> None:
        """Judge held messages in order once released (runs for the connection's life)."""
        await self._released.wait()
        while True:
            while self._queue:
                self._draining = True
                item = self._queue.popleft()
                try:
                    result = await self._judge(item.method, item.params, item.notification)
                    if isinstance(result, Deferred):
                        result = await _settled(result)
                    item.result = result
                except Exception as exc:
                    item.error = exc
                finally:
                    item.done.set()
            self._draining = False
            self._wake = anyio.Event()
            await self._wake.wait()


async def _settled(deferred: Deferred) -> Any:
    """The value of a handler's ``Deferred``, whether it wraps work or a future."""
    future = deferred.future
    if future is None:
        return await deferred.wait()
    done = anyio.Event()
    future.add_done_callback(lambda _: done.set())
    await done.wait()
    return deferred.settle(future)
