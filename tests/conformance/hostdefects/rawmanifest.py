"""How the raw host follows manifest changes (MCPL §17), correct unless a defect says otherwise.

On ``mcpl/manifestChanged`` it fetches ``mcpl/manifest`` (at most one fetch in flight and one
pending, at least :data:`MIN_INTERVAL` apart). The fetched manifest is applied in the reader,
the moment its response is read: the grant becomes the old grant intersected with what the
new manifest would be granted (removals revoked at once, additions never granted), feature
sets only ever switch off, and then a ``featureSets/update`` Request carries the complete
narrowed grant. A result that is not an object changes nothing; the revision is never
trusted or checked.
"""

from __future__ import annotations

import threading
import time
from typing import TYPE_CHECKING, Any

from tests.conformance.hostdefects.rawgrant import digest, enabled, feature_sets, granted

if TYPE_CHECKING:
    from tests.conformance.hostdefects.rawhost import RawHost

MIN_INTERVAL = 0.3


class ManifestFollower:
    """The manifest side of one raw host connection."""

    def __init__(self, host: RawHost) -> None:
        self.host = host
        self.in_flight = False
        self.pending = False
        self.lock = threading.Lock()

    def announced(self, params: Any) -> None:
        defects = self.host.defects
        if defects.manifest_not_fetched:
            # Acts on the hint alone: re-sends its policy without looking at the manifest.
            policy = self.host.policy_params()
            self.host.spawn(self.host.request, "featureSets/update", policy)
            return
        if defects.manifest_fetch_unbounded:
            self.host.spawn(self._fetch)
            return
        with self.lock:
            if self.in_flight:
                self.pending = True
                return
            self.in_flight = True
        self.host.spawn(self._fetch_loop)

    def _fetch_loop(self) -> None:
        while True:
            self._fetch()
            with self.lock:
                if not self.pending:
                    self.in_flight = False
                    return
                self.pending = False
            time.sleep(MIN_INTERVAL)

    def _fetch(self) -> None:
        host = self.host
        tell: list[bool] = []
        host.request("mcpl/manifest", {}, on_response=lambda r: tell.append(self._apply(r)))
        if tell and tell[0]:
            params = host.policy_params()
            host.request("featureSets/update", params, on_response=host.read_receipt)

    def _apply(self, response: dict[str, Any]) -> bool:
        """Apply a fetched manifest in the reader; return whether to send a new policy."""
        host, defects = self.host, self.host.defects
        new = response.get("result")
        if not isinstance(new, dict):
            if defects.manifest_garbage_drops_mcpl:
                host.ready, host.grant, host.enabled = False, set(), set()
            return False
        old = host.manifest or {}
        if defects.manifest_revision_trusted and new.get("revision") == old.get("revision"):
            return False
        if defects.manifest_digest_enforced and new.get("revision") != digest(new):
            return False
        if defects.manifest_additions_granted:
            grant = granted(new)
            sets = enabled(feature_sets(new), grant)
        else:
            grant = host.grant & granted(new)
            sets = enabled(feature_sets(new), grant) & host.enabled
        host.manifest = new
        if grant == host.grant and sets == host.enabled:
            return False
        host.grant, host.enabled = grant, sets
        return True
