"""Size of the ``tools/list`` answer an agent gets, and of the part its model reads.

Run: ``python bench/bench_tool_list.py``. It lists the tools of a server built on a port that
answers nothing but its prose mode (Switchboard's own tools; a connector's tools come on top
and are the connector's to keep small), in each prose mode (``speak``'s description follows
it), and prints, per mode:

- the **model-facing part**: each tool's name, description and input schema, as compact JSON
  (what a client puts into the model's context); its size in bytes and an estimated token
  count, and the bound tests/agents/tools/test_tool_list_size.py holds it to (3,000 tokens);
- the whole ``tools/list`` result as compact JSON (adds output schemas and annotations, which
  clients use but rarely show the model), in bytes and estimated tokens;
- the model-facing bytes of each tool, largest first.

The token estimate is **bytes / 4**, rounded up: a common rule of thumb for English text and
JSON with tokenizers of the GPT/Claude family (it overestimates for plain prose and is close
for JSON punctuation). When ``tiktoken`` is installed, its ``cl100k_base`` count is printed
too; it is not a dependency.
"""

from __future__ import annotations

import asyncio
import json
import math
from typing import Any, cast

from mcp import Client
from mcp.types import Tool

from switchboard.agents.port.protocol import AgentPort
from switchboard.agents.tools import server_for

MODES = ("hybrid", "explicit", "locus", "disabled")
BOUND_TOKENS = 3000
SHARED_BOUND_TOKENS = 3600


class _ModeOnly:
    """A port that answers its prose mode, has no connector tools and ignores watchers."""

    def __init__(self, mode: str, *, shared: bool = False) -> None:
        self.prose_mode = mode
        self.many_agents = shared
        self.is_task = shared

    def connector_tools(self) -> list[Any]:
        return []

    def __getattr__(self, name: str) -> Any:
        if name.startswith("watch_"):  # the server follows changes; nothing changes here
            return lambda *args, **kwargs: None
        raise AttributeError(f"the tool list asked the port for {name!r}")


async def listed(mode: str, *, shared: bool = False) -> list[Tool]:
    """Switchboard's own tools, as ``tools/list`` shows them to an agent in ``mode``; with
    ``shared``, to a task agent among several (every tool, the mail, directory and task ones
    too)."""
    port = cast(AgentPort, _ModeOnly(mode, shared=shared))
    async with Client(server_for(port), mode="legacy") as client:
        return list((await client.list_tools()).tools)


def compact(value: Any) -> bytes:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode()


def model_facing(tool: Tool) -> dict[str, Any]:
    """The part of a tool a model reads: name, description, input schema."""
    return {"name": tool.name, "description": tool.description, "inputSchema": tool.input_schema}


def estimate_tokens(size: int) -> int:
    return math.ceil(size / 4)


def _tiktoken(text: bytes) -> str:
    try:
        import tiktoken  # type: ignore[import-not-found, unused-ignore]
    except ImportError:
        return "tiktoken not installed"
    encoding = tiktoken.get_encoding("cl100k_base")
    return f"tiktoken cl100k_base: {len(encoding.encode(text.decode()))} tokens"


async def main() -> None:
    shared = await listed(MODES[0], shared=True)
    facing_shared = compact([model_facing(t) for t in shared])
    print(
        f"agents sharing the board (a task agent, prose mode {MODES[0]}): {len(shared)} tools, "
        f"model-facing {len(facing_shared):,} bytes, ~{estimate_tokens(len(facing_shared)):,} "
        f"tokens (bytes/4; bound {SHARED_BOUND_TOKENS:,})"
    )
    for mode in MODES:
        tools = await listed(mode)
        facing = compact([model_facing(t) for t in tools])
        whole = compact(
            [t.model_dump(mode="json", by_alias=True, exclude_none=True) for t in tools]
        )
        print(f"prose mode {mode}: {len(tools)} tools")
        print(
            f"  model-facing (name, description, inputSchema): {len(facing):,} bytes, "
            f"~{estimate_tokens(len(facing)):,} tokens (bytes/4; bound {BOUND_TOKENS:,}); "
            f"{_tiktoken(facing)}"
        )
        print(
            f"  whole tools/list result: {len(whole):,} bytes, "
            f"~{estimate_tokens(len(whole)):,} tokens (bytes/4)"
        )
        if mode == MODES[0]:
            sizes = sorted(((len(compact(model_facing(t))), t.name) for t in tools), reverse=True)
            for size, name in sizes:
                print(f"    {name:<18} {size:>5} bytes")


if __name__ == "__main__":
    asyncio.run(main())
