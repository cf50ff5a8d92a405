"""The kit's own version, as ``clientInfo`` and the reports name it."""

from __future__ import annotations

from importlib import metadata

__all__ = ["kit_version"]


def kit_version() -> str:
    """The installed switchboard version, for ``clientInfo`` and reports."""
    try:
        return metadata.version("switchboard")
    except metadata.PackageNotFoundError:
        return "unknown"
