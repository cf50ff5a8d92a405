"""A module's tools, gathered at definition time and added to a server with the port bound.

What this module knows: :class:`ToolSet`. Each tool module keeps one; ``@TOOLS.tool(...)``
records a plain module-level function (its name and its description for the agent) and
returns it unchanged. A tool function takes the agent's
:class:`~switchboard.host.AgentPort` as its first parameter, then its typed arguments.
:meth:`ToolSet.register` adds every recorded tool to an ``MCPServer`` in definition order, with
the port bound (a ``functools.partial`` that keeps the function's ``__name__``): the SDK
derives the input schema from the remaining parameters (titled after the function's name) and
the output schema from the return annotation, exactly as for a function written for that one
server.

What it deliberately does not know: what any tool does, and which host is behind the port.
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from mcp.server.mcpserver import MCPServer

from switchboard.host import AgentPort

__all__ = ["ToolSet"]

_Tool = TypeVar("_Tool", bound=Callable[..., Awaitable[Any]])


class _Bound(functools.partial[Awaitable[Any]]):
    """A tool function with the port bound, under the function's own name (the SDK names the
    input schema after it)."""

    __name__: str


@dataclass(frozen=True, slots=True)
class _Recorded:
    fn: Callable[..., Awaitable[Any]]
    name: str
    description: str


class ToolSet:
    """The tools of one module, in the order they were defined."""

    __slots__ = ("_tools",)

    def __init__(self) -> None:
        self._tools: list[_Recorded] = []

    @property
    def names(self) -> tuple[str, ...]:
        """The tools' names, in definition order."""
        return tuple(t.name for t in self._tools)

    def tool(self, *, description: str, name: str | None = None) -> Callable[[_Tool], _Tool]:
        """Record the decorated function as the tool ``name`` (default: the function's name)."""

        def recording(fn: _Tool) -> _Tool:
            self._tools.append(_Recorded(fn, name or fn.__name__, description))
            return fn

        return recording

    def register(self, mcp: MCPServer, port: AgentPort) -> None:
        """Add every tool to ``mcp``, each called with ``port`` as its first argument."""
        for t in self._tools:
            bound = _Bound(t.fn, port)
            bound.__name__ = t.fn.__name__
            mcp.add_tool(bound, name=t.name, description=t.description)
