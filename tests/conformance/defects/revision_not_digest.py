"""Defect (handshake, manifest): the ``revision`` hashes the package version, not the content.

It is well formed (``sha256:`` and 43 base64url characters) and stable across restarts, but
it is not the §17.2 digest of the manifest, at ``initialize`` or from ``mcpl/manifest``.
"""

from __future__ import annotations

import base64
import hashlib
from typing import Any

from tests.conformance.defects.rawkit import RawConnector

_VERSION_HASH = hashlib.sha256(b"raw-defect 0.1.0").digest()
REVISION = "sha256:" + base64.urlsafe_b64encode(_VERSION_HASH).rstrip(b"=").decode()


class VersionRevision(RawConnector):
    def manifest(self) -> dict[str, Any]:
        return {**super().manifest(), "revision": REVISION}


if __name__ == "__main__":
    VersionRevision().main()
