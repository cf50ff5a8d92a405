"""The Matrix bridge is a connector like any other: of Switchboard it imports only the
connector SDK, the protocol and the transport (import-linter contract
``matrix-bridge-on-the-sdk``), and an import of the host breaks the contract."""

from __future__ import annotations

from pathlib import Path

from tests.test_architecture import ROOT, _copy_of_the_project, _lint_imports


def test_the_bridge_keeps_its_contract_and_an_import_of_the_host_would_break_it(
    tmp_path: Path,
) -> None:
    kept = _lint_imports(ROOT, ROOT / "src", "matrix-bridge-on-the-sdk")
    project = _copy_of_the_project(tmp_path)
    bridge = project / "src" / "switchboard" / "connectors" / "matrix" / "bridge.py"
    head = "from __future__ import annotations\n"
    source = bridge.read_text(encoding="utf-8")
    assert head in source
    bridge.write_text(
        source.replace(head, f"{head}\nimport switchboard.conformance  # noqa\n", 1),
        encoding="utf-8",
    )
    broken = _lint_imports(project, project / "src", "matrix-bridge-on-the-sdk")

    assert kept.returncode == 0, kept.stdout
    assert broken.returncode != 0
    assert "1 broken" in broken.stdout, broken.stdout
