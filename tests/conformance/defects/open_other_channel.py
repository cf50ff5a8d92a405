"""Defect (lifecycle): ``channels/open`` looks channels up by ``type`` alone (the last one
registered of that type wins), so opening ``raw:#one`` answers with ``raw:#two``."""

from __future__ import annotations

from typing import Any

from tests.conformance.defects.rawkit import RawConnector, RpcFailure


class ByType(RawConnector):
    def open(self, params: dict[str, Any]) -> dict[str, Any]:
        by_type = {d["type"]: d for d in self.channels.values()}
        found = by_type.get(params.get("type"))
        if found is None:
            raise RpcFailure(-32024, "Cannot open", {"type": params.get("type")})
        return {"channel": found}


if __name__ == "__main__":
    ByType().main()
