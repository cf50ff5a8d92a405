"""The root of every exception the host raises.

Hierarchy::

    HostError                      root of everything switchboard.host raises on purpose

Each concept folder derives its own exceptions from :class:`HostError` and documents them in
its module; wire errors a peer sent are :mod:`switchboard.transport` / :mod:`switchboard.protocol`
exceptions, and store failures are :class:`switchboard.store.StoreError`.
"""

from __future__ import annotations

__all__ = ["HostError"]


class HostError(Exception):
    """Root of every exception :mod:`switchboard.host` raises on purpose."""
