"""An MCPL connector that registers many channels in one request, then stops reading its stdin
until a file appears (raw asyncio, no switchboard imports).

``python late_reader_connector.py N GO OUT``: after the policy exchange it sends one
``channels/register`` of ``N`` channels ``c:0`` .. ``c:N-1`` and stops reading; the host's
answer (about 33 bytes a channel) stays in the pipe. Once the file GO exists (never, if GO is
``-``) it reads on, and writes the number of results in the answer to OUT.
"""

from __future__ import annotations

import asyncio
import os
import sys
import time
from pathlib import Path
from typing import Any

import orjson

MANIFEST = {
    "protocolVersion": "2025-06-18",
    "serverInfo": {"name": "late-reader", "version": "0"},
    "capabilities": {"experimental": {"mcpl": {"version": "0.5", "channels": True}}},
}


def _wait_for(go: str) -> None:
    """Return once the file ``go`` exists (never for ``-``)."""
    while go == "-" or not os.path.exists(go):
        time.sleep(0.01)


def _frame(message: dict[str, Any]) -> bytes:
    return orjson.dumps(message) + b"\n"


async def main() -> None:
    count, go, out = int(sys.argv[1]), sys.argv[2], sys.argv[3]
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=1 << 26)
    stdin, _ = await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    transport, protocol = await loop.connect_write_pipe(
        asyncio.streams.FlowControlMixin, sys.stdout
    )
    writer = asyncio.StreamWriter(transport, protocol, reader, loop)
    while line := await reader.readline():
        message = orjson.loads(line)
        method = message.get("method")
        if method == "initialize":
            writer.write(_frame({"jsonrpc": "2.0", "id": message["id"], "result": MANIFEST}))
        elif method == "featureSets/update" and "id" in message:
            writer.write(
                _frame({"jsonrpc": "2.0", "id": message["id"], "result": {"accepted": True}})
            )
            stdin.pause_reading()  # the pipe keeps what the host writes from now on
            break
        elif "id" in message and method is not None:
            error = {"code": -32601, "message": "not here"}
            writer.write(_frame({"jsonrpc": "2.0", "id": message["id"], "error": error}))
    channels = [
        {"id": f"c:{i}", "type": "t", "label": f"#c{i}", "direction": "bidirectional"}
        for i in range(count)
    ]
    request = {"jsonrpc": "2.0", "id": "reg", "method": "channels/register"}
    writer.write(_frame({**request, "params": {"channels": channels}}))
    await writer.drain()
    await asyncio.to_thread(_wait_for, go)
    stdin.resume_reading()
    while line := await reader.readline():
        message = orjson.loads(line)
        if message.get("id") == "reg":
            await asyncio.to_thread(Path(out).write_text, str(len(message["result"]["results"])))
        elif "id" in message and message.get("method") is not None:
            error = {"code": -32601, "message": "not here"}
            writer.write(_frame({"jsonrpc": "2.0", "id": message["id"], "error": error}))


if __name__ == "__main__":
    asyncio.run(main())
