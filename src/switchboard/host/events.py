"""Host events for people watching: the demo's terminal view and the logs.

An :data:`Observer` is a plain callable ``(kind, server_id, detail)``. It must not block and
must not raise; it is called from inside message handlers. Kinds: ``ready``, ``mcp-only``,
``register``, ``changed``, ``incoming``, ``push``, ``publish``, ``connector-exit``,
``connector-restart``, ``manifest`` (a fetched manifest changed the grant) and ``lifecycle``
(an open, close or reconciliation step; ``detail["event"]`` says which).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

Observer = Callable[[str, str, Mapping[str, Any]], None]


def null_observer(kind: str, server_id: str, detail: Mapping[str, Any]) -> None:
    """An observer that ignores everything."""


def fan_out(*observers: Observer) -> Observer:
    """One observer that calls each of ``observers`` in turn."""

    def call(kind: str, server_id: str, detail: Mapping[str, Any]) -> None:
        for o in observers:
            o(kind, server_id, detail)

    return call
