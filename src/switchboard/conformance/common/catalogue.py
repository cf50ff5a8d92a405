"""The requirement catalogue: every MCPL requirement ID, and which check covers it.

It reads ``conformance/requirements.toml`` (one entry per requirement: its ID, level and the
check that covers it, or why none can) and holds the registries of both suites to it, so a
requirement without a check, or a check naming an unknown requirement, is caught.

What it deliberately does not know: how checks run, their results, or any wire traffic.
"""

from __future__ import annotations

import tomllib
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from .errors import KitError

__all__ = [
    "DEFAULT_CATALOGUE_PATH",
    "Catalogue",
    "CatalogueError",
    "Coverage",
    "Level",
    "Requirement",
    "Target",
    "coverage",
    "link_errors",
    "load_catalogue",
    "parse_catalogue",
]

Level = Literal["MUST", "SHOULD", "MAY"]
Target = Literal["host", "server", "library"]

# src/switchboard/conformance/catalogue.py -> repository root (editable install or a checkout).
DEFAULT_CATALOGUE_PATH = Path(__file__).resolve().parents[4] / "conformance" / "requirements.toml"

_ID_PATTERN = r"^[HSD]-[0-9]{2}$"
_CHECK_PATTERN = r"^[a-z][a-z0-9_]*(\.[a-z0-9_]+)+$"
_PREFIX_TARGET: Mapping[str, Target] = MappingProxyType(
    {"H": "host", "S": "server", "D": "library"}
)


class CatalogueError(KitError, ValueError):
    """The catalogue file is missing, is not TOML, or does not validate."""


class Requirement(BaseModel):
    """One requirement of the catalogue.

    Attributes:
        id: ``H-xx``, ``S-xx`` or ``D-xx``; the letter fixes the target.
        section: where the rule sits in the spec (for example ``§5.3``).
        level: ``MUST``, ``SHOULD`` or ``MAY``.
        statement: our own short paraphrase.
        target: ``host``, ``server`` or ``library``.
        check: the id of the covering check, or ``None``.
        not_checkable: why it cannot be checked from outside, or ``None``.
        planned: the check is proposed, not yet written.
    """

    model_config = ConfigDict(frozen=True, extra="forbid", strict=True)

    id: str = Field(pattern=_ID_PATTERN)
    section: str = Field(min_length=1)
    level: Level
    statement: str = Field(min_length=1)
    target: Target
    check: str | None = Field(default=None, pattern=_CHECK_PATTERN)
    not_checkable: str | None = Field(default=None, min_length=1)
    planned: bool = False

    @model_validator(mode="after")
    def _consistent(self) -> Requirement:
        expected = _PREFIX_TARGET[self.id[0]]
        if self.target != expected:
            raise ValueError(f"{self.id}: target must be {expected!r}, not {self.target!r}")
        if self.check is not None and self.not_checkable is not None:
            raise ValueError(f"{self.id}: give either check or not_checkable, not both")
        if self.planned and self.check is None:
            raise ValueError(f"{self.id}: planned needs a check id")
        return self


@dataclass(frozen=True, slots=True)
class Catalogue:
    """The requirements in file order, with an index by ID.

    What it knows:

    - the data file ``conformance/requirements.toml`` at the repository root: one
      ``[[requirement]]`` table per ID (``H-xx`` host, ``S-xx`` server, ``D-xx`` digest library)
      with its spec section, level, target, our own one-line statement, and either the ``check`` id
      that covers it (``planned = true`` while that check is only proposed) or a ``not_checkable``
      reason;
    - how to validate that file (pydantic, unknown keys refused, IDs unique) and to look a
      requirement up by ID in O(1);
    - coverage counts, and the link between the catalogue and the checks that exist
      (:func:`link_errors`), enforced in both directions.

    How a check id maps to code: kit checks register themselves under their id (their registry lives
    with the suites, not here). The ``library.digest.*`` ids are pytest functions; each digest test
    module publishes a ``CHECKS`` dict from check id to test function, and ``tests/conformance``
    feeds those ids to :func:`link_errors`.

    Attributes:
        requirements: every requirement, in the order of the file.
        by_id: read-only mapping from ID to requirement.
    """

    requirements: tuple[Requirement, ...]
    by_id: Mapping[str, Requirement]

    @classmethod
    def of(cls, requirements: Collection[Requirement]) -> Catalogue:
        """Build a catalogue, refusing duplicate IDs."""
        index: dict[str, Requirement] = {}
        for requirement in requirements:
            if requirement.id in index:
                raise CatalogueError(f"duplicate requirement id {requirement.id}")
            index[requirement.id] = requirement
        return cls(tuple(requirements), MappingProxyType(index))

    def __len__(self) -> int:
        return len(self.requirements)

    def __contains__(self, requirement_id: object) -> bool:
        return requirement_id in self.by_id


@dataclass(frozen=True, slots=True)
class Coverage:
    """Counts over a catalogue.

    Attributes:
        total: requirements in the catalogue.
        with_check: requirements naming a check (planned or not).
        planned: of those, the ones whose check is only proposed.
        not_checkable: requirements with a reason instead of a check.
        unaccounted: requirements with neither (a :func:`link_errors` finding).
    """

    total: int
    with_check: int
    planned: int
    not_checkable: int
    unaccounted: int

    @property
    def implemented(self) -> int:
        """Requirements whose check exists (named and not planned)."""
        return self.with_check - self.planned


def parse_catalogue(data: Mapping[str, Any]) -> Catalogue:
    """Validate parsed TOML (a table with a ``requirement`` array) into a :class:`Catalogue`.

    Raises:
        CatalogueError: a wrong shape, an invalid entry, or a duplicate ID.
    """
    unknown = set(data) - {"requirement"}
    if unknown:
        raise CatalogueError(f"unknown top-level keys: {sorted(unknown)}")
    entries = data.get("requirement")
    if not isinstance(entries, list) or not entries:
        raise CatalogueError("the catalogue needs a non-empty [[requirement]] array")
    requirements: list[Requirement] = []
    for position, entry in enumerate(entries):
        try:
            requirements.append(Requirement.model_validate(entry))
        except ValidationError as exc:
            label = entry.get("id", f"#{position}") if isinstance(entry, dict) else position
            raise CatalogueError(f"requirement {label}: {exc}") from exc
    return Catalogue.of(requirements)


def load_catalogue(path: Path | None = None) -> Catalogue:
    """Read and validate the catalogue file (by default ``conformance/requirements.toml``).

    Raises:
        CatalogueError: the file is missing, is not TOML, or does not validate.
    """
    source = DEFAULT_CATALOGUE_PATH if path is None else path
    try:
        with source.open("rb") as handle:
            data = tomllib.load(handle)
    except OSError as exc:
        raise CatalogueError(f"cannot read {source}: {exc}") from exc
    except tomllib.TOMLDecodeError as exc:
        raise CatalogueError(f"{source} is not valid TOML: {exc}") from exc
    return parse_catalogue(data)


def coverage(catalogue: Catalogue) -> Coverage:
    """Count the requirements with a check, a planned check, a reason, or nothing."""
    with_check = planned = not_checkable = unaccounted = 0
    for requirement in catalogue.requirements:
        if requirement.check is not None:
            with_check += 1
            planned += requirement.planned
        elif requirement.not_checkable is not None:
            not_checkable += 1
        else:
            unaccounted += 1
    return Coverage(len(catalogue), with_check, planned, not_checkable, unaccounted)


def link_errors(
    catalogue: Catalogue, registered_check_ids: Mapping[str, Collection[str]]
) -> list[str]:
    """Every broken link between the catalogue and the registered checks, as sentences.

    Args:
        catalogue: the requirements.
        registered_check_ids: each registered check's id, mapped to the requirement IDs it
            says it covers (empty when it names none).

    Returns:
        One message per problem, in a stable order: requirements with neither a check nor a
        reason; registered checks naming requirement IDs the catalogue lacks; and catalogue
        check ids (other than planned ones) that no registered check provides.
    """
    errors: list[str] = []
    for requirement in catalogue.requirements:
        if requirement.check is None and requirement.not_checkable is None:
            errors.append(f"{requirement.id}: neither a check nor a not_checkable reason")
    for check_id in sorted(registered_check_ids):
        for requirement_id in sorted(registered_check_ids[check_id]):
            if requirement_id not in catalogue.by_id:
                errors.append(f"check {check_id} names unknown requirement {requirement_id}")
    for requirement in catalogue.requirements:
        wanted = requirement.check
        if wanted is not None and not requirement.planned and wanted not in registered_check_ids:
            errors.append(f"{requirement.id}: no registered check provides {wanted}")
    return errors
