"""Which ``Host`` headers a listener answers to.

:func:`default_hosts` are the names a listener on an address answers to when ``allowed_hosts``
is not set; :func:`host_allowed` matches a header against an entry, or ``name:PORT`` against an
entry ``name:*``.
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["bare_host", "default_hosts", "host_allowed"]


def bare_host(host: str) -> str:
    """``host`` without the brackets of an IPv6 literal (``[::1]`` -> ``::1``)."""
    return host[1:-1] if host.startswith("[") and host.endswith("]") else host


def default_hosts(bare: str) -> tuple[str, ...]:
    """The Host header values a listener bound to ``bare`` answers to without
    ``allowed_hosts``: its own name (and ``localhost`` for a loopback address, or the loopback
    addresses for ``localhost``), each with any port."""
    names = [f"[{bare}]" if ":" in bare else bare]
    if bare in ("127.0.0.1", "::1"):
        names.append("localhost")
    elif bare.lower() == "localhost":
        names += ["127.0.0.1", "[::1]"]
    return tuple(form for name in names for form in (name, f"{name}:*"))


def host_allowed(value: str, allowed: Sequence[str]) -> bool:
    """Whether ``value`` is an entry of ``allowed``, or ``name:PORT`` for an entry ``name:*``."""
    for entry in allowed:
        if value == entry:
            return True
        if entry.endswith(":*"):
            stem = entry[:-1]
            if value.startswith(stem) and value[len(stem) :].isdigit():
                return True
    return False
