"""Manifest changes on one connection: announcements, bounded fetches, and applying the result.

``mcpl/manifestChanged`` is only a hint: every change goes through a fetch, fetches are rate
bounded, and the fetched manifest is applied in the peer's reader the moment it is read, so a
revocation is in force before any later message is dispatched; after a narrowing the connector
is told the narrowed grant, and additions are never granted (mcpl-protocol.md 3.15, MCPL §17).

What it deliberately does not know: what a diff means for the grant
(:mod:`switchboard.protocol.manifest_diff`), the registry, or how the policy Request is built.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

import anyio
import structlog

from switchboard.config import ConnectorConfig
from switchboard.protocol import DigestError, Grant, Manifest, manifest_digest
from switchboard.protocol.manifest_diff import (
    Narrowing,
    diff_manifests,
    narrow,
    read_fetched_manifest,
)
from switchboard.runtime.ratelog import RateLimitedLog
from switchboard.transport import LinkClosedError, Peer, RequestTimeoutError, RpcError

__all__ = ["ManifestWatch"]

log = structlog.get_logger(__name__)


class WatchedSession(Protocol):
    """What a manifest watch reads and changes of its connection (a ``ConnectorSession``)."""

    server_id: str
    config: ConnectorConfig
    manifest: Manifest | None
    grant: Grant
    enabled_feature_sets: frozenset[str]
    noted: RateLimitedLog

    @property
    def peer(self) -> Peer | None: ...

    @property
    def mcpl_active(self) -> bool: ...

    async def wait_ready(self) -> None: ...

    async def tell_policy(self) -> None: ...

    def adopt_manifest(self, manifest: Manifest, narrowing: Narrowing) -> None: ...


class ManifestWatch:
    """Follows one connector's manifest after the handshake.

    What it knows (mcpl-protocol.md 3.15, MCPL §17.3-§17.8):

    - ``mcpl/manifestChanged`` is only a hint. It is never acted on by itself: every change goes
      through a fetch with ``mcpl/manifest`` first (H-57), and the notification's revision is not
      trusted either way; an "unchanged" revision is fetched like any other and the fetched content
      decides (H-62, H-65);
    - the fetch rate is bounded per connection (H-63): at most one fetch in flight and one pending,
      and at least ``manifest_fetch_interval`` seconds between the starts of two fetches.
      Announcements that arrive meanwhile are coalesced into the pending fetch; the excess is logged
      as a connector defect and never causes a renegotiation by itself;
    - the fetched manifest is applied in the peer's reader, the moment the response is read, so a
      revocation is in force before any later inbound message is dispatched (H-58, H-13). It is read
      as at ``initialize``; one that parses but is partly invalid still has its removals applied
      (H-60); one that does not parse leaves the previous manifest in force, and MCPL is never
      dropped over it, however often it happens (H-61). A revision that is not the §17.2 digest of
      the content is logged as a defect and the content is applied anyway (H-64);
    - after a narrowing the connector is told with a ``featureSets/update`` Request carrying the
      complete narrowed grant (H-12); additions are never granted (H-59).

    Args:
        session: the connection whose manifest, grant and feature sets this keeps current.
        min_interval: the least number of seconds between the starts of two fetches.

    Attributes:
        announcements: ``mcpl/manifestChanged`` notifications received.
        fetches: ``mcpl/manifest`` requests sent.
        dropped: announcements folded into a fetch another announcement had already asked for.
        parse_failures: fetched manifests in a row that did not parse.
        applied: fetched manifests whose content differed and was applied.
    """

    def __init__(self, session: WatchedSession, *, min_interval: float) -> None:
        self._session = session
        self._interval = min_interval
        self._wanted = anyio.Event()
        self._waiting = 0
        self._last_start: float | None = None
        self.announcements = 0
        self.fetches = 0
        self.dropped = 0
        self.parse_failures = 0
        self.applied = 0
        self._fetching = False
        self.log = log.bind(server_id=session.server_id)
        # A connector may announce and change its manifest without end: what that makes the
        # host say is the session's rate-limited log, per kind.
        self._noted = session.noted

    @property
    def pending(self) -> bool:
        """Whether an announcement waits for a fetch that has not started yet."""
        return self._waiting > 0

    @property
    def fetching(self) -> bool:
        """Whether a fetch (and the policy Request that may follow it) is under way."""
        return self._fetching

    def announce(self, params: Any) -> None:
        """Take an ``mcpl/manifestChanged``; never blocks (it runs in the dispatcher)."""
        self.announcements += 1
        if not (isinstance(params, Mapping) and isinstance(params.get("revision"), str)):
            self._noted.note(
                ("manifest_changed_malformed",),
                "manifest_changed_malformed",
                level="info",
                params=params,
            )
        self._waiting += 1
        self._wanted.set()

    async def run(self) -> None:
        """Fetch whenever a change was announced, at a bounded rate, until cancelled."""
        session = self._session
        await session.wait_ready()
        while True:
            await self._wanted.wait()
            if self._last_start is not None:
                delay = self._last_start + self._interval - anyio.current_time()
                if delay > 0:
                    await anyio.sleep(delay)
            # Everything announced up to this point is answered by this one fetch.
            self._wanted = anyio.Event()
            asked, self._waiting = self._waiting, 0
            if asked > 1:
                self.dropped += asked - 1
                self._noted.note(
                    ("manifest_changed_flood_coalesced",),
                    "manifest_changed_flood_coalesced",
                    announcements=asked,
                    dropped_total=self.dropped,
                )
            if not session.mcpl_active:
                continue
            self._last_start = anyio.current_time()
            self._fetching = True
            try:
                await self._fetch()
            finally:
                self._fetching = False

    async def _fetch(self) -> None:
        session = self._session
        peer = session.peer
        if peer is None:
            return
        self.fetches += 1
        narrowed: list[bool] = []

        def read(result: Any) -> None:
            # In the peer's reader: applied before the next inbound message is dispatched.
            try:
                narrowed.append(self._apply(result))
            except Exception:
                self._noted.note(
                    ("manifest_apply_failed",),
                    "manifest_apply_failed",
                    level="error",
                    exc_info=True,
                )

        try:
            await peer.request("mcpl/manifest", {}, on_response=read)
        except RpcError as exc:
            self._noted.note(
                ("manifest_announced_but_not_queryable",),
                "manifest_announced_but_not_queryable",
                code=exc.code,
                message=exc.message,
            )
            return
        except (RequestTimeoutError, LinkClosedError) as exc:
            self._noted.note(
                ("manifest_fetch_unanswered",), "manifest_fetch_unanswered", error=str(exc)
            )
            return
        if narrowed and narrowed[0]:
            await session.tell_policy()

    def _apply(self, result: Any) -> bool:
        """Apply a fetched manifest; return whether the connector must be told a new policy."""
        session = self._session
        old = session.manifest
        if old is None or not session.mcpl_active:
            return False
        new = read_fetched_manifest(result, tools="tools" in old.advertised)
        if new is None:
            self.parse_failures += 1
            self._noted.note(
                ("manifest_unparseable_previous_kept",),
                "manifest_unparseable_previous_kept",
                got=type(result).__name__,
                failures_in_a_row=self.parse_failures,
            )
            return False
        self.parse_failures = 0
        self._check_revision(result)
        for note in new.diagnostics:
            self._noted.note(
                ("manifest_diagnostic",), "manifest_diagnostic", level="info", note=note
            )
        change = diff_manifests(old, new)
        if change.empty:
            session.manifest = new
            self.log.debug("manifest_unchanged", revision=new.revision)
            return False
        config = session.config
        narrowing = narrow(
            new,
            change,
            grant=session.grant,
            enabled=session.enabled_feature_sets,
            policy=config.grant,
            selection=config.enabled_feature_sets,
        )
        tell = narrowing.narrows(session.grant, session.enabled_feature_sets)
        session.adopt_manifest(new, narrowing)
        self.applied += 1
        self._noted.note(
            ("manifest_change_receipt",),
            "manifest_change_receipt",
            level="info",
            revision=new.revision,
            impacts=[impact.to_json() for impact in narrowing.impacts],
        )
        return tell

    def _check_revision(self, result: Mapping[str, Any]) -> None:
        revision = result.get("revision")
        if revision is None:
            return
        try:
            digest = manifest_digest(dict(result))
        except (DigestError, TypeError, ValueError) as exc:
            self._noted.note(
                ("manifest_digest_unavailable",),
                "manifest_digest_unavailable",
                level="info",
                error=str(exc),
            )
            return
        if revision != digest:
            # A conformance defect of the connector, never a reason to refuse the content.
            self._noted.note(
                ("manifest_revision_mismatch",),
                "manifest_revision_mismatch",
                revision=revision,
                digest=digest,
            )
