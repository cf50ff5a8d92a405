"""What the SDK-based defects share: Demo Town as the subject, and a way to break one thing.

Demo Town (``--interval 0 --hello``) passes every server check that applies; each defect
program swaps exactly one method for a broken one with :func:`patch` (in its own process
only) or subclasses :class:`DemoConnector`, then calls :func:`run`.
"""

from __future__ import annotations

from switchboard.connectors.demo import DemoConnector, DemoOptions
from switchboard.runtime.logs import configure

__all__ = ["DemoConnector", "patch", "run", "town"]


def patch(owner: type, name: str, replacement: object) -> None:
    """Replace the attribute ``name`` of ``owner`` (a class) for this process."""
    if not hasattr(owner, name):
        raise AttributeError(f"{owner.__name__} has no {name!r} to break")
    setattr(owner, name, replacement)


def town() -> DemoOptions:
    """The options every defect runs Demo Town with: no chatter, one greeting."""
    return DemoOptions(interval=0, hello=True)


def run(connector: DemoConnector | None = None) -> None:
    """Run ``connector`` (default: an unchanged Demo Town) on stdio until the host leaves."""
    configure("WARNING")
    (connector or DemoConnector(town())).main()
