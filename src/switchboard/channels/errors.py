"""The root of every exception the channels package raises, :class:`ChannelsError`.

Under it: :class:`~switchboard.channels.names.errors.ChannelNameError` (a name did not pick one
usable channel), the decoding errors of the pure rules, and ``NoUnsentDraft``.

What it deliberately does not know: what the host makes of these exceptions (refusals for an
agent).
"""

from __future__ import annotations

__all__ = ["ChannelsError"]


class ChannelsError(Exception):
    """Root of every exception :mod:`switchboard.channels` raises.

    Hierarchy::

        ChannelsError                  root of everything switchboard.channels raises ├──
        ChannelNameError           a name did not pick one usable channel (.names.errors, │   └──
        ...                    which documents its subclasses) ├── DecodeError                a
        logged decision or event is malformed │                              (.lifecycle.decisions)
        └── NoUnsentDraft              ``>>`` with the unsent marker, but no draft is kept
        (.prose.drafts; also a ``LookupError``)

    Each exception lives beside the code that raises it and derives from :class:`ChannelsError`;
    this module only holds the root, so every module of the package can import it without a cycle. A
    caller's mistake (an argument out of range, a contradictory call) raises the built-in
    ``ValueError`` or ``TypeError`` instead: the tree holds what callers are meant to handle.
    """
