"""``switchboard run``: the host with its agent-facing MCP server on the configured transport.

For ``transport = "http"`` it plans the endpoint and binds its socket before any connector
starts (so a refused token file or a port in use stops it at once), logs the endpoint's URL and
auth mode (``agent_endpoint``), then serves through :mod:`switchboard.agent_http`. For
``stdio`` it serves MCP on stdin/stdout without authentication: the parent process is the
agent. It knows nothing of what the tools do.
"""

from __future__ import annotations

from collections.abc import Callable

import anyio
import structlog

from switchboard.agent_http import bind_endpoint, plan_endpoint, serve_endpoint
from switchboard.config import Config
from switchboard.host import Switchboard
from switchboard.tools import build_server

__all__ = ["serve"]

log = structlog.get_logger(__name__)

_UVICORN_LEVELS = frozenset({"critical", "error", "warning", "info", "debug"})


async def serve(config: Config, *, on_listening: Callable[[str], object] | None = None) -> None:
    """Run connectors and the MCP server until the agent leaves (stdio) or we are cancelled.

    Args:
        config: the whole configuration; ``config.agent`` says which transport.
        on_listening: called with the endpoint's URL once the HTTP socket listens (with the
            port actually bound, when ``port = 0``).

    Raises:
        ConfigError: the HTTP endpoint cannot be set up (its token file, its address).
    """
    agent = config.agent
    if agent.transport == "http":
        plan = plan_endpoint(agent)
        sock = bind_endpoint(plan)
        try:
            url = plan.url(sock.getsockname()[1])
            log.info("agent_endpoint", url=url, auth=plan.auth, agent=agent.name)
            if plan.token is None:
                log.warning(
                    "agent_endpoint_unauthenticated",
                    url=url,
                    why="no [agent] token or token_file: any local process can act as the agent",
                    next='set token = "${SWITCHBOARD_AGENT_TOKEN}" in [agent]',
                )
            if on_listening is not None:
                on_listening(url)
            level = config.log_level.lower()
            async with Switchboard.started(config) as board:
                await serve_endpoint(
                    build_server(board, agent=agent.name),
                    plan,
                    sock,
                    log_level=level if level in _UVICORN_LEVELS else "info",
                )
        finally:
            sock.close()
        return
    async with Switchboard.started(config) as board:
        server = build_server(board, agent=agent.name)
        if agent.transport == "stdio":
            log.info("agent_endpoint", transport="stdio", auth="none", agent=agent.name)
            await server.run_stdio_async()
        else:
            await anyio.sleep_forever()
