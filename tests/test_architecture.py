"""The architecture's import rules hold, and the tool that checks them catches a breach.

The rules are import-linter contracts in ``pyproject.toml`` (docs/architecture.md, "Layers"):
the layer order of the packages and of the parts inside each large one, the pure rules
(``channels``, ``lifecycle.rules``, ``tuneouts.rules``), ``protocol`` free of I/O, ``store`` and
``directory`` alone, the conformance kit and the connector SDK on the wire layers only, the
kit's two suites apart, the tools reaching the agent side only through its port, and the agent
side and the lifecycle reaching a connector only through its owner. Every contract is shown
to break when one forbidden import is added.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Final

import pytest

ROOT: Final = Path(__file__).resolve().parents[1]
LINT_IMPORTS: Final = Path(sys.executable).with_name("lint-imports")


def _lint_imports(project: Path, src: Path, *contracts: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(src)}
    limits = [arg for contract in contracts for arg in ("--contract", contract)]
    return subprocess.run(
        [str(LINT_IMPORTS), "--no-cache", *limits],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def _copy_of_the_project(tmp_path: Path) -> Path:
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    shutil.copytree(
        ROOT / "src" / "switchboard",
        tmp_path / "src" / "switchboard",
        ignore=shutil.ignore_patterns("__pycache__"),
    )
    return tmp_path


def test_every_import_contract_is_kept() -> None:
    result = _lint_imports(ROOT, ROOT / "src")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 broken" in result.stdout


@pytest.mark.parametrize(
    ("module", "line", "contract"),
    [
        ("channels/ref.py", "import time", "rules-pure"),
        ("channels/registry.py", "import switchboard.store", "rules-pure"),
        ("lifecycle/rules/book.py", "import anyio", "rules-pure"),
        ("tuneouts/rules/epochs.py", "import switchboard.events", "rules-pure"),
        ("transport/peer.py", "import switchboard.connector", "transport-knows-no-mcpl"),
        ("store/records.py", "import switchboard.channels", "store-alone"),
        ("directory/entry.py", "import switchboard.store", "directory-alone"),
        ("protocol/wire.py", "import anyio", "protocol-no-io"),
        ("events/kinds.py", "import switchboard.agents.tools", "layers"),
        ("lifecycle/answers.py", "import switchboard.tuneouts.words", "layers"),
        ("conformance/host/policy.py", "import switchboard.app", "kit-and-sdk-on-the-wire-only"),
        ("connector/policy.py", "import switchboard.store", "kit-and-sdk-on-the-wire-only"),
        ("conformance/host/policy.py", "from ..server import session", "kit-suites-apart"),
        ("agents/tools/server.py", "import switchboard.connections.session", "tools-through-port"),
        ("agents/tools/server.py", "import switchboard.agents.port.service", "tools-through-port"),
        (
            "agents/speech/publish.py",
            "import switchboard.connections.session",
            "connectors-through-their-owners",
        ),
        (
            "lifecycle/reconcile.py",
            "import switchboard.connections.supervisor",
            "connectors-through-their-owners",
        ),
        ("agents/desk/desk.py", "import switchboard.agents.roster.roster", "agents-inside"),
        ("agents/inbox/routing.py", "import switchboard.agents.inbox.watch", "inbox-inside"),
        ("lifecycle/decider.py", "import switchboard.lifecycle.parts", "lifecycle-inside"),
        ("tuneouts/records.py", "import switchboard.tuneouts.state", "tuneouts-inside"),
        ("connections/limits.py", "import switchboard.connections.session", "connections-inside"),
        ("store/wire.py", "import switchboard.store.sqlite.schema", "store-inside"),
        ("app/retention.py", "import switchboard.app.board", "app-inside"),
        (
            "agents/inbox/read.py",
            "import switchboard.store.sqlite",
            "durable-things-behind-interfaces",
        ),
        ("connections/session.py", "import sqlite3", "durable-things-behind-interfaces"),
        ("store/wire.py", "import psycopg", "cluster-clients-confined"),
        ("agents/inbox/read.py", "import nats", "cluster-clients-confined"),
        ("cluster/pg/probe.py", "import switchboard.agents", "cluster-pg-at-the-store-layer"),
    ],
)
def test_an_added_forbidden_import_breaks_its_contract(
    tmp_path: Path, module: str, line: str, contract: str
) -> None:
    project = _copy_of_the_project(tmp_path)
    target = project / "src" / "switchboard" / module
    source = target.read_text(encoding="utf-8")
    head = "from __future__ import annotations\n"
    assert head in source
    target.write_text(source.replace(head, f"{head}\n{line}  # noqa\n", 1), encoding="utf-8")

    before = _lint_imports(ROOT, ROOT / "src", contract)
    after = _lint_imports(project, project / "src", contract)

    assert before.returncode == 0, before.stdout
    assert after.returncode != 0
    assert "1 broken" in after.stdout, after.stdout
