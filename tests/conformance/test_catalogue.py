"""The requirement catalogue: it loads, it is internally consistent, and its links hold."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Final

import pytest

from switchboard.conformance.common.catalogue import (
    DEFAULT_CATALOGUE_PATH,
    Catalogue,
    CatalogueError,
    Requirement,
    coverage,
    link_errors,
    load_catalogue,
    parse_catalogue,
)
from switchboard.conformance.host_suite import HOST_CHECKS
from switchboard.conformance.server_suite import SERVER_CHECKS
from tests.protocol import test_digest, test_digest_published

# mcpl-protocol.md §5 numbers its requirements H-01..H-68, S-01..S-45 and D-01..D-05; S-46 is
# the MCP stdio transport's rule that stdout carries only JSON-RPC messages (issue #10).
EXPECTED_IDS: Final = (
    {f"H-{n:02d}" for n in range(1, 69)}
    | {f"S-{n:02d}" for n in range(1, 47)}
    | {f"D-{n:02d}" for n in range(1, 6)}
)
DIGEST_CHECKS: Final[dict[str, Callable[..., object]]] = {
    **test_digest.CHECKS,
    **test_digest_published.CHECKS,
}


def _entry(requirement_id: str = "H-01", **fields: Any) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "id": requirement_id,
        "section": "§5.3",
        "level": "MUST",
        "statement": "A statement.",
        "target": {"H": "host", "S": "server", "D": "library"}[requirement_id[0]],
        "check": "host.policy.example",
    }
    entry.update(fields)
    return {key: value for key, value in entry.items() if value is not None}


def _catalogue(*entries: dict[str, Any]) -> Catalogue:
    return parse_catalogue({"requirement": list(entries)})


@pytest.fixture(scope="module")
def catalogue() -> Catalogue:
    return load_catalogue()


def test_the_catalogue_file_sits_in_the_conformance_folder_at_the_repository_root() -> None:
    repo_root = Path(__file__).resolve().parents[2]
    assert repo_root / "conformance" / "requirements.toml" == DEFAULT_CATALOGUE_PATH


def test_the_catalogue_holds_every_requirement_id_exactly_once(catalogue: Catalogue) -> None:
    ids = [requirement.id for requirement in catalogue.requirements]
    assert len(ids) == len(set(ids))
    assert set(ids) == EXPECTED_IDS


def test_every_requirement_has_a_check_or_a_reason_and_a_target_matching_its_id(
    catalogue: Catalogue,
) -> None:
    for requirement in catalogue.requirements:
        assert (requirement.check is None) != (requirement.not_checkable is None), requirement.id
        assert requirement.level in {"MUST", "SHOULD", "MAY"}
        prefix_target = {"H": "host", "S": "server", "D": "library"}[requirement.id[0]]
        assert requirement.target == prefix_target, requirement.id


def test_lookups_by_id_return_the_same_records_as_the_file_order(catalogue: Catalogue) -> None:
    assert len(catalogue) == len(EXPECTED_IDS)
    for requirement in catalogue.requirements:
        assert catalogue.by_id[requirement.id] is requirement
    assert "H-99" not in catalogue
    assert "D-04" in catalogue


def test_coverage_counts_checks_planned_checks_and_reasons(catalogue: Catalogue) -> None:
    counts = coverage(catalogue)
    assert counts.total == len(EXPECTED_IDS)
    assert counts.with_check + counts.not_checkable + counts.unaccounted == counts.total
    assert counts.unaccounted == 0
    server = {r.id for r in catalogue.requirements if r.target == "server" and not r.planned}
    host = {
        r.id
        for r in catalogue.requirements
        if r.target == "host" and r.check is not None and not r.planned
    }
    assert counts.implemented == len(DIGEST_CHECKS) + len(server) + len(host)
    planned = sum(1 for r in catalogue.requirements if r.planned)
    assert counts.planned == planned


def test_the_digest_requirements_are_covered_by_real_test_functions(catalogue: Catalogue) -> None:
    digest_checks = {r.check for r in catalogue.requirements if r.target == "library"}
    assert digest_checks == set(DIGEST_CHECKS)
    for requirement in catalogue.requirements:
        if requirement.target == "library":
            assert not requirement.planned, requirement.id
    for check_id, function in DIGEST_CHECKS.items():
        assert function.__name__.startswith("test_"), check_id
        module = inspect.getmodule(function)
        assert module is not None
        assert getattr(module, function.__name__) is function


def test_the_real_catalogue_has_no_link_errors_with_the_digest_checks_registered(
    catalogue: Catalogue,
) -> None:
    registered: Mapping[str, frozenset[str]] = {
        check_id: frozenset(r.id for r in catalogue.requirements if r.check == check_id)
        for check_id in DIGEST_CHECKS
    }
    merged = {**registered, **SERVER_CHECKS.requirement_map(), **HOST_CHECKS.requirement_map()}
    assert link_errors(catalogue, merged) == []


def test_link_errors_report_a_requirement_with_neither_check_nor_reason() -> None:
    planted = _catalogue(_entry("H-01"), _entry("H-02", check=None))
    assert link_errors(planted, {"host.policy.example": ()}) == [
        "H-02: neither a check nor a not_checkable reason"
    ]


def test_link_errors_report_a_check_naming_an_unknown_requirement() -> None:
    planted = _catalogue(_entry("H-01"))
    errors = link_errors(planted, {"host.policy.example": ("H-01", "H-77")})
    assert errors == ["check host.policy.example names unknown requirement H-77"]


def test_link_errors_report_a_catalogue_check_nobody_provides_unless_it_is_planned() -> None:
    planted = _catalogue(
        _entry("S-01", check="server.missing.check"),
        _entry("S-02", check="server.future.check", planned=True),
        _entry("S-03", check=None, not_checkable="Only visible inside the server."),
    )
    assert link_errors(planted, {}) == ["S-01: no registered check provides server.missing.check"]


def test_link_errors_list_every_planted_problem_together() -> None:
    planted = _catalogue(
        _entry("H-01", check=None),
        _entry("H-02", check="host.gone.check"),
    )
    errors = link_errors(planted, {"host.other.check": ("X-01",)})
    assert len(errors) == 3


def test_a_duplicate_id_is_refused() -> None:
    with pytest.raises(CatalogueError, match="duplicate requirement id H-01"):
        _catalogue(_entry("H-01"), _entry("H-01"))


@pytest.mark.parametrize(
    ("fields", "problem"),
    [
        ({"level": "MUSTN'T"}, "level"),
        ({"target": "server"}, "target must be 'host'"),
        ({"id": "H-1"}, "id"),
        ({"check": "Not A Check"}, "check"),
        ({"not_checkable": "Inside only."}, "either check or not_checkable"),
        ({"check": None, "planned": True}, "planned needs a check"),
        ({"colour": "blue"}, "colour"),
        ({"statement": ""}, "statement"),
    ],
)
def test_an_invalid_entry_is_refused_with_its_id(fields: dict[str, Any], problem: str) -> None:
    with pytest.raises(CatalogueError, match="requirement") as caught:
        _catalogue(_entry("H-05", **fields))
    assert problem in str(caught.value)


def test_a_file_without_requirements_or_with_stray_tables_is_refused() -> None:
    with pytest.raises(CatalogueError, match="non-empty"):
        parse_catalogue({})
    with pytest.raises(CatalogueError, match="unknown top-level keys"):
        parse_catalogue({"requirement": [_entry()], "extra": {}})


def test_a_missing_or_broken_file_is_a_catalogue_error(tmp_path: Path) -> None:
    with pytest.raises(CatalogueError, match="cannot read"):
        load_catalogue(tmp_path / "absent.toml")
    broken = tmp_path / "broken.toml"
    broken.write_text("[[requirement]\nid = ", encoding="utf-8")
    with pytest.raises(CatalogueError, match="not valid TOML"):
        load_catalogue(broken)


def test_requirements_are_frozen_values() -> None:
    requirement = Requirement.model_validate(_entry())
    with pytest.raises(ValueError, match="frozen"):
        requirement.level = "SHOULD"  # type: ignore[misc]


def test_the_statements_are_short_single_sentences(catalogue: Catalogue) -> None:
    for requirement in catalogue.requirements:
        assert len(requirement.statement) <= 200, requirement.id
        assert "\n" not in requirement.statement, requirement.id


def test_every_table_of_the_data_file_becomes_one_requirement(catalogue: Catalogue) -> None:
    text = DEFAULT_CATALOGUE_PATH.read_text(encoding="utf-8")
    assert text.count("\n[[requirement]]\n") == len(catalogue)
