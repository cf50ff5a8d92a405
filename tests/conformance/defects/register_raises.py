"""Defect (registration): its own registration code raises, so it registers nothing.

The traceback goes to stderr and the connector carries on serving. No check can fail (there
is nothing to judge), which is exactly why the kit must say so: the report warns that a
server advertising ``channels.register`` registered no channels under a full grant, and
quotes the end of its stderr.
"""

from __future__ import annotations

import sys
import traceback

from tests.conformance.defects.rawkit import RawConnector


class Broken(RawConnector):
    def descriptors(self) -> list[dict[str, object]]:
        raise KeyError("platform_token")

    def register(self) -> None:
        try:
            super().register()
        except KeyError:
            traceback.print_exc(file=sys.stderr)
            sys.stderr.write("register failed: no platform token configured\n")
            sys.stderr.flush()


if __name__ == "__main__":
    Broken().main()
