"""The root of every exception the host raises.

Hierarchy::

    HostError                      root of everything switchboard.host raises on purpose
    ├── Refusal                    an agent's call did nothing, and why (.refusal)
    ├── LinkConfigError            a connector's url cannot be dialled (.connection.links)
    ├── LifecycleError             a channel's lifecycle run failed (.lifecycle.errors)
    └── DecisionNotRecorded        the decision log refused an append (.lifecycle.journal)

Each concept folder derives its own exceptions from :class:`HostError` and documents them in
its module; wire errors a peer sent are :mod:`switchboard.transport` / :mod:`switchboard.protocol`
exceptions, and store failures are :class:`switchboard.store.StoreError`.
"""

from __future__ import annotations

__all__ = ["HostError"]


class HostError(Exception):
    """Root of every exception :mod:`switchboard.host` raises on purpose."""
