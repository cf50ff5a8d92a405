"""``switchboard run``: the host with its agent-facing MCP server on the configured transport."""

from __future__ import annotations

import anyio

from switchboard.config import Config
from switchboard.host import Switchboard
from switchboard.tools import build_server


async def serve(config: Config) -> None:
    """Run connectors and the MCP server until the agent leaves (stdio) or we are cancelled."""
    async with Switchboard.started(config) as board:
        server = build_server(board, agent=config.agent.name)
        transport = config.agent.transport
        if transport == "stdio":
            await server.run_stdio_async()
        elif transport == "http":
            await server.run_streamable_http_async(host=config.agent.host, port=config.agent.port)
        else:
            await anyio.sleep_forever()
