"""``switchboard conformance host``: exit status, JSON output and usage errors."""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path
from typing import Final

import anyio
import pytest

from switchboard.conformance.cli import main_host
from switchboard.conformance.host_suite import host_check_ids

REPO: Final = Path(__file__).resolve().parents[2]
LIST: Final = "host.channels.list_answered"


def command(module: str) -> list[str]:
    return [sys.executable, "-m", f"tests.conformance.hostdefects.{module}", "{connector}"]


@pytest.mark.slow
def test_a_passing_host_prints_json_and_exits_zero(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(REPO)
    out = io.StringIO()
    code = main_host(["--json", "--only", LIST, "--", *command("rawhost")], stdout=out)
    data = json.loads(out.getvalue())
    assert code == 0
    assert data["summary"]["pass"] == 1
    assert data["sections"][0]["checks"][0]["id"] == LIST


@pytest.mark.slow
def test_a_host_that_never_answers_exits_one_and_shows_the_exchange(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(REPO)
    out = io.StringIO()
    code = main_host(["--only", LIST, "--", *command("list_silent")], stdout=out)
    assert code == 1
    assert "FAIL" in out.getvalue()
    assert "channels/list" in out.getvalue()


def test_list_prints_every_host_check_id() -> None:
    out = io.StringIO()
    assert main_host(["--list"], stdout=out) == 0
    assert out.getvalue().split() == list(host_check_ids())


@pytest.mark.parametrize(
    "argv",
    [
        ["--", "host-without-placeholder"],
        [],
        ["--only", "host.no.such_check", "--", "h", "{connector}"],
        ["--bogus"],
    ],
)
def test_a_usage_error_exits_two(argv: list[str]) -> None:
    assert main_host(argv, stdout=io.StringIO()) == 2


@pytest.mark.slow
@pytest.mark.anyio
async def test_the_module_runs_the_host_suite_named_first_like_the_console() -> None:
    """``python -m switchboard.conformance.cli host [OPTIONS] -- HOST {connector}``, as a real
    subprocess: the documented "same, directly" form."""
    argv = [sys.executable, "-m", "switchboard.conformance.cli", "host", "--json", "--only", LIST]
    with anyio.fail_after(120):
        done = await anyio.run_process([*argv, "--", *command("rawhost")], cwd=REPO, check=False)
    data = json.loads(done.stdout)
    assert done.returncode == 0
    assert data["target"].startswith(f"{sys.executable} -m tests.conformance.hostdefects.rawhost")
    assert data["summary"]["pass"] == 1
