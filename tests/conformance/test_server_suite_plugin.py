"""The pytest plugin, used the way a connector author would: in a pytest run of their own.

A small test file written to a temporary folder is run by a separate pytest process with
``-p switchboard.conformance.pytest_plugin``; its outcome counts are read back.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Final

import pytest

from switchboard.conformance.server_suite import server_check_ids

pytestmark = pytest.mark.slow

REPO: Final = Path(__file__).resolve().parents[2]

AUTHOR_TESTS: Final = """
import sys

import pytest

DEMO = [sys.executable, "-m", "switchboard.connectors.demo", "--interval", "0", "--hello"]
DEFECT = [sys.executable, "-m", "tests.conformance.defects.close_unknown_accepted"]


@pytest.mark.parametrize(
    "check_id", ["server.channels.close", "server.hooks.timely_valid_response"]
)
def test_demo_check(mcpl_server_suite, check_id):
    mcpl_server_suite.check(DEMO, check_id)


def test_the_configured_server(mcpl_server_suite):
    mcpl_server_suite.check(None, "server.channels.publish_unknown_channel")


def test_a_defect_is_not_conformant(mcpl_server_suite):
    report = mcpl_server_suite.run(DEFECT, only=["server.channels.close"])
    with pytest.raises(pytest.fail.Exception, match="closing an unknown channel"):
        mcpl_server_suite.assert_conformant(report)


def test_a_failing_check_fails_its_test(mcpl_server_suite):
    mcpl_server_suite.check(DEFECT, "server.channels.close")


def test_generated(mcpl_server_check):
    assert mcpl_server_check.startswith("server.")
"""


def test_the_plugin_runs_checks_as_tests_in_an_authors_pytest_run(tmp_path: Path) -> None:
    (tmp_path / "test_author.py").write_text(AUTHOR_TESTS, encoding="utf-8")
    (tmp_path / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), str(REPO / "src")])}
    server = f"{sys.executable} -m switchboard.connectors.demo --interval 0"
    completed = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-p",
            "switchboard.conformance.pytest_plugin",
            "-p",
            "no:cacheprovider",
            "-q",
            "-rs",
            f"--mcpl-server={server}",
            str(tmp_path / "test_author.py"),
        ],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    output = completed.stdout + completed.stderr
    generated = len(server_check_ids())
    assert f"1 failed, {generated + 3} passed, 1 skipped" in output, output
    assert "test_a_failing_check_fails_its_test" in output
    assert "not applicable" in output  # the skipped hook check says why
    assert completed.returncode == 1
