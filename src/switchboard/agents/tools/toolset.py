"""A module's tools, gathered at definition time and added to a server with the port bound.

:class:`ToolSet`: ``@TOOLS.tool(...)`` records a plain module-level function whose first
parameter is the agent's port; :meth:`ToolSet.tools_for` gives the SDK ``Tool`` of each tool
offered to a port's agent with the port bound, so the SDK derives the schemas as for a function
written for that one server. The derived part is built once per tool and shared by every server.

What it deliberately does not know: what any tool does, and which host is behind the port.
"""

from __future__ import annotations

import functools
import inspect
import typing
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from mcp.server.mcpserver.tools import Tool
from mcp.types import ToolAnnotations

from switchboard.agents.port.protocol import AgentPort

__all__ = ["READ_ONLY", "Description", "Offered", "ToolSet", "writes"]

_Tool = TypeVar("_Tool", bound=Callable[..., Awaitable[Any]])

Description = str | Callable[[AgentPort], str]
"""A tool's description: fixed, or worded for the agent whose port the server is built with."""

READ_ONLY = ToolAnnotations(read_only_hint=True, open_world_hint=False)
"""A tool that only reads what Switchboard holds (clients may call it without asking)."""


def writes(*, world: bool, idempotent: bool, destructive: bool = False) -> ToolAnnotations:
    """A tool that changes something: outside Switchboard (``world``: it posts, opens or shows
    something through a connector) or only inside it; ``idempotent`` when calling it again
    with the same arguments changes nothing more; ``destructive`` when it removes or replaces
    something that cannot be had back."""
    return ToolAnnotations(
        read_only_hint=False,
        destructive_hint=destructive,
        idempotent_hint=idempotent,
        open_world_hint=world,
    )


class _Bound(functools.partial[Awaitable[Any]]):
    """A tool function with the port bound, under the function's own name (the SDK names the
    input schema after it)."""

    __name__: str


def _bind(fn: Callable[..., Awaitable[Any]], port: AgentPort | None) -> _Bound:
    """``fn`` with ``port`` bound first, keeping its name and the resolved annotations of the
    remaining parameters (what the SDK reads to build the schemas; resolved once per function
    and shared)."""
    bound = _Bound(fn, port)
    bound.__name__ = fn.__name__
    bound.__annotations__ = _remaining_hints(fn)
    return bound


@functools.cache
def _remaining_hints(fn: Callable[..., Awaitable[Any]]) -> dict[str, Any]:
    first = next(iter(inspect.signature(fn).parameters))
    hints = typing.get_type_hints(fn, include_extras=True)
    return {k: v for k, v in hints.items() if k != first}


Offered = Callable[[AgentPort], bool]
"""Whether a tool is listed for the agent behind a port (the many-agent tools are listed only
where several agents share the Switchboard; ``task_finish`` only to task agents)."""


@dataclass(frozen=True, slots=True)
class _Recorded:
    fn: Callable[..., Awaitable[Any]]
    name: str
    description: Description
    annotations: ToolAnnotations
    when: Offered | None


class ToolSet:
    """The tools of one module, in the order they were defined.

    What it knows: :class:`ToolSet`. Each tool module keeps one; ``@TOOLS.tool(...)`` records a
    plain module-level function (its name, its description for the agent and its MCP
    ``ToolAnnotations``) and returns it unchanged. A description may depend on the agent (a function
    of its port, such as ``speak``'s, which follows the agent's prose mode); it is worded when the
    tool is added to a server. A tool function takes the agent's
    :class:`~switchboard.agents.port.AgentPort` as its first parameter, then its typed arguments.
    :meth:`ToolSet.tools_for` gives the SDK ``Tool`` of every recorded tool offered to a port's
    agent (``when``), in definition order, with the port bound (a ``functools.partial`` that keeps
    the function's ``__name__`` and the resolved annotations of the remaining parameters): the SDK
    derives the input schema from the remaining parameters (titled after the function's name) and
    the output schema from the return annotation, and hands a parameter annotated with its
    ``Context`` the call's context, exactly as for a function written for that one server. The
    derived part is built once per tool and shared by every agent's server.
    """

    __slots__ = ("_templates", "_tools")

    def __init__(self) -> None:
        self._tools: list[_Recorded] = []
        self._templates: dict[str, Tool] = {}

    @property
    def names(self) -> tuple[str, ...]:
        """The tools' names, in definition order."""
        return tuple(t.name for t in self._tools)

    def tool(
        self,
        *,
        description: Description,
        annotations: ToolAnnotations,
        name: str | None = None,
        when: Offered | None = None,
    ) -> Callable[[_Tool], _Tool]:
        """Record the decorated function as the tool ``name`` (default: the function's name).

        ``annotations`` are required: every tool says whether it only reads, whether it
        reaches the world outside Switchboard (posts, opens, shows typing), and, when it
        writes, whether it destroys anything and whether repeating it changes more. ``when``
        says for which agents the tool is listed at all (default: every agent).
        """

        def recording(fn: _Tool) -> _Tool:
            recorded = _Recorded(fn, name or fn.__name__, description, annotations, when)
            self._tools.append(recorded)
            return fn

        return recording

    def tools_for(self, port: AgentPort) -> list[Tool]:
        """The SDK ``Tool`` of every tool offered to ``port``'s agent, each calling its
        function with ``port`` as the first argument.

        What the SDK derives from a signature (the argument model, the input and output JSON
        schemas) is the same for every port, so it is built once per tool (:meth:`_template`)
        and each port's tool is a shallow copy with its own bound function and description:
        a server per agent then costs a few kilobytes, not the ~600 KB of pydantic models and
        schemas the SDK builds for a fresh set of tools.
        """
        tools: list[Tool] = []
        for t in self._tools:
            if t.when is not None and not t.when(port):
                continue
            text = t.description if isinstance(t.description, str) else t.description(port)
            tools.append(
                self._template(t).model_copy(update={"fn": _bind(t.fn, port), "description": text})
            )
        return tools

    def _template(self, t: _Recorded) -> Tool:
        template = self._templates.get(t.name)
        if template is None:
            template = Tool.from_function(
                _bind(t.fn, None), name=t.name, description="", annotations=t.annotations
            )
            self._templates[t.name] = template
        return template
