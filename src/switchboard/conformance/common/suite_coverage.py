"""How much of the catalogue a suite covers, and whether its links hold.

What this module knows: for one target of the catalogue (``server``), which requirements
name a check that the suite registers (*implemented*), which name a check still only
planned, which are recorded as not checkable from outside, and every broken link between
the catalogue and the registry (:func:`~.catalogue.link_errors` over that target's
requirements, plus a check the catalogue names that does not name the requirement back).
An implemented check must have no link errors.

What it deliberately does not know: how checks run or what they found.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .catalogue import Catalogue, CatalogueError, Target, link_errors, load_catalogue

__all__ = ["SuiteCoverage", "suite_coverage"]


@dataclass(frozen=True, slots=True)
class SuiteCoverage:
    """Coverage of one catalogue target by one suite.

    Attributes:
        target: ``server`` (or ``host`` later).
        total: requirements of that target in the catalogue.
        implemented: IDs whose catalogue check the suite registers.
        planned: IDs whose check is only planned.
        not_checkable: IDs recorded as not checkable from outside, with the reason.
        link_errors: every broken link, as sentences (empty when all links hold).
    """

    target: Target
    total: int
    implemented: tuple[str, ...]
    planned: tuple[str, ...]
    not_checkable: Mapping[str, str]
    link_errors: tuple[str, ...]

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dictionary."""
        return {
            "target": self.target,
            "total": self.total,
            "implemented": list(self.implemented),
            "planned": list(self.planned),
            "not_checkable": dict(self.not_checkable),
            "link_errors": list(self.link_errors),
        }

    def summary(self) -> str:
        """One line for the terminal report."""
        errors = "; ".join(self.link_errors) if self.link_errors else "none"
        return (
            f"{len(self.implemented)} of {self.total} {self.target} requirements checked, "
            f"{len(self.not_checkable)} not checkable from outside, "
            f"{len(self.planned)} planned; link errors: {errors}"
        )


def suite_coverage(
    target: Target,
    registered: Mapping[str, Sequence[str]],
    *,
    catalogue: Catalogue | None = None,
    path: Path | None = None,
) -> SuiteCoverage | None:
    """Coverage of the catalogue's ``target`` requirements by the ``registered`` checks.

    Args:
        target: which requirements to consider.
        registered: check id → requirement IDs, for every check the suite registers.
        catalogue: the catalogue; loaded from ``path`` (or the default file) when omitted.
        path: where to load the catalogue from.

    Returns:
        The coverage, or ``None`` when no catalogue file can be read (an installed kit
        without the repository's ``conformance/`` folder).
    """
    if catalogue is None:
        try:
            catalogue = load_catalogue(path)
        except CatalogueError:
            return None
    own = Catalogue.of([r for r in catalogue.requirements if r.target == target])
    implemented = tuple(r.id for r in own.requirements if r.check in registered and not r.planned)
    planned = tuple(r.id for r in own.requirements if r.planned)
    not_checkable = {r.id: r.not_checkable for r in own.requirements if r.not_checkable}
    errors = link_errors(own, registered)
    errors.extend(
        f"{r.id}: check {r.check} does not name {r.id}"
        for r in own.requirements
        if r.check is not None and r.check in registered and r.id not in registered[r.check]
    )
    return SuiteCoverage(
        target=target,
        total=len(own),
        implemented=implemented,
        planned=planned,
        not_checkable=not_checkable,
        link_errors=tuple(errors),
    )
