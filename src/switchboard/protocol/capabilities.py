"""Capability paths, method gates, the grant matcher and the advertisement flattener.

The 17 valid capability paths and which gates each MCPL method (mcpl-protocol.md 3.1);
:class:`Grant`, which matches patterns with one-segment ``*`` and fails closed; and how an
advertisement flattens to the leaves it offers, so a grant is advertisement ∩ policy.

What it deliberately does not know: feature sets, readiness, who sent what.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from types import MappingProxyType
from typing import Any, Final

__all__ = [
    "CAPABILITY_PATHS",
    "METHOD_GATES",
    "Grant",
    "advertised_paths",
    "effective_grant",
    "path_matches",
    "unknown_advertised_members",
    "validate_path_charset",
]

CAPABILITY_PATHS: Final[frozenset[str]] = frozenset(
    {
        "pushEvents",
        "tools",
        "modelInfo",
        "inferenceRequest",
        "inferenceRequest.streaming",
        "inferenceLifecycle",
        "contextHooks.beforeInference.observe",
        "contextHooks.beforeInference.inject.system",
        "contextHooks.beforeInference.inject.beforeUser",
        "contextHooks.beforeInference.inject.afterUser",
        "channels.register",
        "channels.lifecycle",
        "channels.publish",
        "channels.incoming",
        "channels.streaming",
        "channels.acknowledge",
        "channels.typing",
    }
)

METHOD_GATES: Final[Mapping[str, str]] = MappingProxyType(
    {
        "push/event": "pushEvents",
        "inference/request": "inferenceRequest",
        "model/info": "modelInfo",
        "inference/lifecycle": "inferenceLifecycle",
        "channels/register": "channels.register",
        "channels/changed": "channels.register",
        "channels/list": "channels.register",
        "channels/open": "channels.lifecycle",
        "channels/close": "channels.lifecycle",
        "channels/publish": "channels.publish",
        "channels/incoming": "channels.incoming",
        "channels/outgoing/chunk": "channels.streaming",
        "channels/outgoing/complete": "channels.streaming",
        "channels/acknowledge": "channels.acknowledge",
        "channels/typing": "channels.typing",
    }
)

_PATH_CHARSET = re.compile(r"[A-Za-z0-9._:*-]+")

# Root members of a manifest that are not capabilities (3.15: they belong to no capability
# domain). Everything else at the root is walked as a capability tree.
_NON_CAPABILITY_ROOT_KEYS: Final[frozenset[str]] = frozenset({"version", "revision", "featureSets"})


def _leaves_by_prefix(paths: Iterable[str]) -> dict[str, frozenset[str]]:
    """Map every dotted prefix of every path (the path included) to the paths below it."""
    below: dict[str, set[str]] = {}
    for path in paths:
        segments = path.split(".")
        for depth in range(1, len(segments) + 1):
            below.setdefault(".".join(segments[:depth]), set()).add(path)
    return {prefix: frozenset(leaves) for prefix, leaves in below.items()}


# Derived from the vocabulary, never written by hand: ``true`` at a node means exactly the
# valid paths filed under that node's dotted prefix, at whatever depth.
_LEAVES_BELOW: Final[Mapping[str, frozenset[str]]] = MappingProxyType(
    _leaves_by_prefix(CAPABILITY_PATHS)
)

# Valid paths with nothing below them; they take only a boolean.
_PURE_LEAVES: Final[frozenset[str]] = frozenset(
    path for path in CAPABILITY_PATHS if _LEAVES_BELOW[path] == {path}
)


def validate_path_charset(path: object) -> bool:
    """Return whether ``path`` is a non-empty string of ``[A-Za-z0-9._:*-]`` (3.1)."""
    return isinstance(path, str) and _PATH_CHARSET.fullmatch(path) is not None


def path_matches(pattern: str, path: str) -> bool:
    """Return whether grant entry ``pattern`` matches capability ``path`` (§5.4, 3.2).

    Both split on ``.``; they match when the segment counts are equal and each pattern
    segment equals the path segment or is exactly ``*``.
    """
    if pattern == path:
        return True
    if "*" not in pattern:
        return False
    pattern_segments = pattern.split(".")
    path_segments = path.split(".")
    if len(pattern_segments) != len(path_segments):
        return False
    return all(p == "*" or p == s for p, s in zip(pattern_segments, path_segments, strict=True))


def _walk(node: Mapping[Any, Any], prefix: str, found: set[str], unknown: list[str] | None) -> None:
    """Collect the valid paths a capability object advertises.

    Each member name is appended to the dotted prefix (a member name may itself contain
    dots; both ``{"a.b": {"c": true}}`` and ``{"a": {"b.c": true}}`` reach ``a.b.c``, A-13).
    ``true`` adds every valid path under the member's prefix. An object recurses, and an
    object at a node that is both a valid path and a parent of valid paths (only
    ``inferenceRequest`` today) also advertises that node, so ``{}`` and
    ``{"streaming": false}`` advertise ``inferenceRequest`` (A-11). Leaves are booleans: an
    object or any other value at a pure leaf advertises nothing. The recursion stops where a
    prefix leads to no valid path, which also bounds the depth on hostile input. ``unknown``
    (when given) collects the members that advertised nothing by mistake.
    """
    for key, value in node.items():
        if not isinstance(key, str):
            continue
        path = f"{prefix}.{key}" if prefix else key
        leaves = _LEAVES_BELOW.get(path)
        if leaves is None:
            if unknown is not None and value is not False and value is not None:
                unknown.append(path)
            continue
        if value is True:
            found.update(leaves)
        elif isinstance(value, Mapping) and path not in _PURE_LEAVES:
            if path in CAPABILITY_PATHS:
                found.add(path)
            _walk(value, path, found, unknown)
        elif value is not False and value is not None and unknown is not None:
            unknown.append(path)


def _root_members(mcpl: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in mcpl.items() if k not in _NON_CAPABILITY_ROOT_KEYS}


def advertised_paths(
    mcpl: Mapping[str, Any], *, mcp_capabilities: Mapping[str, Any] | None = None
) -> frozenset[str]:
    """Flatten an MCPL advertisement or manifest into the capability paths it advertises.

    Args:
        mcpl: the ``capabilities.experimental.mcpl`` object (a manifest or a host
            advertisement). ``version``, ``revision`` and ``featureSets`` are skipped, and
            members that lead to no valid path (``rollback``, ``scopedAccess``, ...) are
            ignored.
        mcp_capabilities: the MCP ``capabilities`` object; a ``tools`` member there
            advertises the ``tools`` path (A-12).

    Returns:
        Only members of :data:`CAPABILITY_PATHS`.
    """
    found: set[str] = set()
    _walk(_root_members(mcpl), "", found, None)
    if mcp_capabilities is not None and mcp_capabilities.get("tools") is not None:
        found.add("tools")
    return frozenset(found)


def unknown_advertised_members(mcpl: Mapping[str, Any]) -> tuple[str, ...]:
    """Return the dotted names of members that advertise no valid path, for diagnostics."""
    unknown: list[str] = []
    _walk(_root_members(mcpl), "", set(), unknown)
    return tuple(unknown)


_CACHE_LIMIT: Final = 4096


class Grant:
    """An immutable set of grant patterns and the question "is this path allowed?".

    What it knows:

    - the 17 valid capability paths (mcpl-protocol.md 3.1) and which capability gates each MCPL
      method (section 2);
    - how a grant pattern matches a path (3.2): equal numbers of dot segments, each segment equal or
      the pattern's segment exactly ``*``. ``*`` is never a subtree match and never a partial glob
      (``chan*`` is literal, A-13);
    - how an advertisement turns into a set of leaf paths (1.5): a generic recursive flatten where
      ``true`` means every valid leaf below the node;
    - the effective grant: advertised leaves that host policy matches, always sent as explicit
      leaves (3.2, H-07).

    ``allows`` answers from a per-instance cache after the first check of a path, so the
    checks on the hot path (one per inbound or outbound method) are dictionary lookups.
    Equality and hashing follow the set of patterns, not their order.
    """

    __slots__ = ("_cache", "_exact", "_key", "_leaves", "_patterns", "_wild")

    _patterns: tuple[str, ...]
    _exact: frozenset[str]
    _wild: tuple[tuple[str, ...], ...]
    _key: frozenset[str]
    _cache: dict[str, bool]
    _leaves: frozenset[str] | None

    def __init__(self, patterns: Iterable[str]) -> None:
        if isinstance(patterns, str):
            raise TypeError("Grant takes an iterable of patterns, not a single string")
        ordered = tuple(dict.fromkeys(patterns))
        for pattern in ordered:
            if not isinstance(pattern, str):
                raise TypeError(f"grant patterns must be strings, got {pattern!r}")
        setter = object.__setattr__
        setter(self, "_patterns", ordered)
        setter(self, "_key", frozenset(ordered))
        setter(self, "_exact", frozenset(p for p in ordered if "*" not in p))
        setter(self, "_wild", tuple(tuple(p.split(".")) for p in ordered if "*" in p))
        setter(self, "_cache", {})
        setter(self, "_leaves", None)

    @property
    def patterns(self) -> tuple[str, ...]:
        """The patterns, duplicates removed, in the order first given."""
        return self._patterns

    @classmethod
    def empty(cls) -> Grant:
        """A grant that allows nothing."""
        return cls(())

    def allows(self, path: str) -> bool:
        """Return whether some pattern matches ``path`` (§5.4)."""
        cached = self._cache.get(path)
        if cached is not None:
            return cached
        allowed = path in self._exact or self._wild_match(path)
        if len(self._cache) < _CACHE_LIMIT:
            self._cache[path] = allowed
        return allowed

    def _wild_match(self, path: str) -> bool:
        if not self._wild:
            return False
        segments = path.split(".")
        count = len(segments)
        for pattern in self._wild:
            if len(pattern) == count and all(
                p == "*" or p == s for p, s in zip(pattern, segments, strict=True)
            ):
                return True
        return False

    def leaves(self) -> frozenset[str]:
        """Return the members of :data:`CAPABILITY_PATHS` this grant allows."""
        if self._leaves is None:
            object.__setattr__(
                self, "_leaves", frozenset(p for p in CAPABILITY_PATHS if self.allows(p))
            )
        assert self._leaves is not None
        return self._leaves

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"{type(self).__name__} is immutable")

    def __reduce__(self) -> tuple[type[Grant], tuple[tuple[str, ...]]]:
        return (Grant, (self._patterns,))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Grant):
            return NotImplemented
        return self._key == other._key

    def __hash__(self) -> int:
        return hash(self._key)

    def __repr__(self) -> str:
        return f"Grant({list(self._patterns)!r})"


def effective_grant(advertised: Iterable[str], policy: Iterable[str]) -> Grant:
    """Return advertised ∩ policy as a grant of explicit leaf paths (§5.4, H-07).

    Args:
        advertised: the paths the peer advertises (see :func:`advertised_paths`); anything
            outside :data:`CAPABILITY_PATHS` is ignored.
        policy: host policy patterns; ``*`` may stand for one whole segment.

    Returns:
        A grant whose patterns are sorted leaf paths and never wildcards, so it can match
        nothing the peer did not advertise.
    """
    wanted = Grant(policy)
    return Grant(sorted(p for p in set(advertised) if p in CAPABILITY_PATHS and wanted.allows(p)))
