"""A connector for the reconnect tests: every start is a new generation with its own idea of
which channels are open.

Usage: ``python lifecycle_connector.py FOLDER``. FOLDER holds ``plan.json``, mapping a
generation (``"1"``, ``"2"``, ... or ``"default"``) to ``{channel id: initiallyOpen}``. Each
start bumps ``FOLDER/generation``, writes its pid to ``FOLDER/pid``, registers the channels of
its generation (those marked true are open on its side from the start), and appends every
``channels/open`` and ``channels/close`` it receives to ``FOLDER/log.jsonl`` as
``{"gen": N, "op": "open"|"close", "channel": id}`` before answering.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from switchboard.connector import Connector
from switchboard.protocol import ChannelDescriptor, CloseParams, OpenParams, OpenResult


class Generations(Connector):
    def __init__(self, folder: Path) -> None:
        super().__init__("generations")
        self.folder = folder
        counter = folder / "generation"
        self.generation = int(counter.read_text()) + 1 if counter.exists() else 1
        counter.write_text(str(self.generation))
        (folder / "pid").write_text(str(os.getpid()))
        plan = json.loads((folder / "plan.json").read_text())
        self.channels_open: dict[str, bool] = plan.get(str(self.generation), plan["default"])

    def note(self, op: str, channel: str) -> None:
        line = json.dumps({"gen": self.generation, "op": op, "channel": channel})
        with (self.folder / "log.jsonl").open("a", encoding="utf-8") as out:
            out.write(line + "\n")
            out.flush()
            os.fsync(out.fileno())

    async def on_ready(self) -> None:
        await self.register(
            [
                {
                    "id": cid,
                    "type": "test",
                    "label": f"#{cid}",
                    "direction": "bidirectional",
                    "initiallyOpen": is_open,
                }
                for cid, is_open in self.channels_open.items()
            ]
        )

    async def on_open(self, params: OpenParams) -> ChannelDescriptor | OpenResult:
        self.note("open", params.channel_id or "")
        return await super().on_open(params)

    async def on_close(self, params: CloseParams) -> None:
        self.note("close", params.channel_id)


if __name__ == "__main__":
    Generations(Path(sys.argv[1])).main()
