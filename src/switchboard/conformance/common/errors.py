"""The root of every exception the conformance kit raises.

Hierarchy::

    KitError                       root of everything switchboard.conformance raises
    ├── CatalogueError             the catalogue file is missing, not TOML, or invalid (also a
    │                              ValueError, which the command line reports as bad input)
    └── CheckStop                  ends one check from inside a helper, with a verdict
        ├── CheckFailed            the target broke the requirement
        ├── NotExercised           nothing the target offered would show the behaviour
        └── NotApplicable          the requirement does not apply to the target

Errors a peer sent on the wire stay :class:`switchboard.transport.RpcError`; they are what the
kit observes, not something it raises about itself.
"""

from __future__ import annotations

__all__ = ["KitError"]


class KitError(Exception):
    """Root of every exception :mod:`switchboard.conformance` raises."""
