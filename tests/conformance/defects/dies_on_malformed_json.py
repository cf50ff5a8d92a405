"""Defect (robustness): exits on the first line that is not JSON."""

from __future__ import annotations

import sys

from tests.conformance.defects.rawkit import RawConnector


class Fragile(RawConnector):
    def on_unparsable(self, line: bytes) -> None:
        sys.stderr.write(f"cannot parse {line!r}; giving up\n")
        raise SystemExit(1)


if __name__ == "__main__":
    Fragile().main()
