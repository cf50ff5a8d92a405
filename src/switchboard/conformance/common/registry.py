"""The check registry: every check of a suite, by id, in the order the report shows them.

What this module knows: what a check *is* — a stable id, the requirement IDs it covers, its
level, its report section, a one-line title, an async function that takes a context and
returns a :class:`~.outcomes.Verdict`, and optionally a cheap ``applies`` predicate that
decides "not applicable" from the server's manifest without opening a connection — and how
checks register themselves with a decorator.

What it deliberately does not know: what a context is (each suite defines its own; the
registry is generic over it), how checks run, or the catalogue file. The link between the
catalogue and the registered ids is checked by :mod:`.suite_coverage`.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Final, Generic, TypeVar

from .outcomes import Level, Verdict

__all__ = ["Check", "CheckRegistry"]

C = TypeVar("C")

_ID_PATTERN: Final = re.compile(r"^[a-z][a-z0-9_]*(\.[a-z0-9_]+)+$")
_REQUIREMENT_PATTERN: Final = re.compile(r"^[HSD]-[0-9]{2}$")


@dataclass(frozen=True, slots=True)
class Check(Generic[C]):
    """One registered check.

    Attributes:
        id: stable and dotted (``server.channels.close``); reports and ``only=`` use it.
        requirements: the requirement IDs it covers.
        level: the strongest level among them; a failed ``MUST`` check fails the run.
        section: the report section.
        title: what it checks, in one line.
        run: the check itself.
        applies: given the manifest from the preflight handshake (``None`` when the server
            is MCP-only), returns why the check does not apply, or ``None`` when it does.
    """

    id: str
    requirements: tuple[str, ...]
    level: Level
    section: str
    title: str
    run: Callable[[C], Awaitable[Verdict]]
    applies: Callable[[Mapping[str, Any] | None], str | None] | None = None


class CheckRegistry(Generic[C]):
    """An ordered, id-indexed set of checks; ids are unique.

    Args:
        name: the suite's name (``"server"``), used in reports.
    """

    def __init__(self, name: str) -> None:
        self.name = name
        self._checks: dict[str, Check[C]] = {}

    def check(
        self,
        check_id: str,
        *,
        requirements: Sequence[str],
        level: Level,
        section: str,
        title: str,
        applies: Callable[[Mapping[str, Any] | None], str | None] | None = None,
    ) -> Callable[[Callable[[C], Awaitable[Verdict]]], Callable[[C], Awaitable[Verdict]]]:
        """Register the decorated async function as a check.

        Raises:
            ValueError: a malformed or duplicate id, or a malformed requirement ID.
        """

        def register(fn: Callable[[C], Awaitable[Verdict]]) -> Callable[[C], Awaitable[Verdict]]:
            self.add(Check(check_id, tuple(requirements), level, section, title, fn, applies))
            return fn

        return register

    def add(self, check: Check[C]) -> None:
        """Register one check.

        Raises:
            ValueError: a malformed or duplicate id, or a malformed requirement ID.
        """
        if not _ID_PATTERN.fullmatch(check.id):
            raise ValueError(f"malformed check id {check.id!r}")
        if check.id in self._checks:
            raise ValueError(f"duplicate check id {check.id!r}")
        bad = [r for r in check.requirements if not _REQUIREMENT_PATTERN.fullmatch(r)]
        if bad:
            raise ValueError(f"check {check.id}: malformed requirement IDs {bad!r}")
        self._checks[check.id] = check

    def __getitem__(self, check_id: str) -> Check[C]:
        return self._checks[check_id]

    def __contains__(self, check_id: object) -> bool:
        return check_id in self._checks

    def __iter__(self) -> Iterator[Check[C]]:
        return iter(self._checks.values())

    def __len__(self) -> int:
        return len(self._checks)

    @property
    def ids(self) -> tuple[str, ...]:
        """Every check id, in registration order."""
        return tuple(self._checks)

    def order_sections(self, sections: Sequence[str]) -> None:
        """Reorder the checks by section (in ``sections`` order), keeping order within each.

        Raises:
            ValueError: a registered check's section is not in ``sections``.
        """
        rank = {section: index for index, section in enumerate(sections)}
        unknown = sorted({c.section for c in self._checks.values()} - set(rank))
        if unknown:
            raise ValueError(f"sections without a place in the order: {unknown!r}")
        ordered = sorted(self._checks.values(), key=lambda c: rank[c.section])
        self._checks = {c.id: c for c in ordered}

    def requirement_map(self) -> Mapping[str, tuple[str, ...]]:
        """Check id to the requirement IDs it covers (what ``link_errors`` takes)."""
        return MappingProxyType({c.id: c.requirements for c in self._checks.values()})

    def select(self, only: Sequence[str] | None) -> list[Check[C]]:
        """The checks to run: all of them, or those named in ``only`` (in registry order).

        Raises:
            KeyError: ``only`` names an id that is not registered.
        """
        if only is None:
            return list(self._checks.values())
        unknown = [check_id for check_id in only if check_id not in self._checks]
        if unknown:
            raise KeyError(f"unknown check ids: {', '.join(unknown)}")
        wanted = frozenset(only)
        return [c for c in self._checks.values() if c.id in wanted]
