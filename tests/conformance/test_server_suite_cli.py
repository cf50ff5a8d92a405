"""``switchboard conformance server``: output formats, exit status and usage errors."""

from __future__ import annotations

import io
import json
import sys
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Final

import anyio
import pytest

from switchboard.conformance.cli import main_server
from switchboard.conformance.server_suite import server_check_ids

REPO: Final = Path(__file__).resolve().parents[2]
DEMO: Final = [sys.executable, "-m", "switchboard.connectors.demo", "--interval", "0"]
DEFECT: Final = [sys.executable, "-m", "tests.conformance.defects.close_unknown_accepted"]


@pytest.mark.slow
def test_a_passing_run_prints_json_writes_junit_and_exits_zero(tmp_path: Path) -> None:
    out = io.StringIO()
    junit = tmp_path / "report.xml"
    argv = ["--json", "--junit", str(junit), "--only", "server.channels.close", "--", *DEMO]
    code = main_server(argv, stdout=out)
    data = json.loads(out.getvalue())
    assert code == 0
    assert data["summary"]["pass"] == 1
    assert data["sections"][0]["checks"][0]["id"] == "server.channels.close"
    assert ET.parse(junit).getroot().get("tests") == "1"


@pytest.mark.slow
def test_a_failed_must_check_exits_one_and_shows_the_exchange(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(REPO)
    out = io.StringIO()
    code = main_server(["--only", "server.channels.close", "--", *DEFECT], stdout=out)
    text = out.getvalue()
    assert code == 1
    assert "FAIL  server.channels.close" in text
    assert "closing an unknown channel got result" in text
    assert "message exchange:" in text
    assert '"method": "channels/close"' in text or '"method":"channels/close"' in text


def test_list_prints_every_check_id() -> None:
    out = io.StringIO()
    assert main_server(["--list"], stdout=out) == 0
    assert tuple(out.getvalue().split()) == server_check_ids()


@pytest.mark.parametrize(
    ("argv", "problem"),
    [
        ([], "give the connector command"),
        (["--url", "tcp://127.0.0.1:1", "--", "python"], "either --url or a command"),
        (["--url", "http://example.invalid"], "unsupported target URL"),
        (["--only", "server.no.such_check", "--", "python"], "unknown check ids"),
    ],
)
def test_usage_errors_exit_two_with_a_reason_on_stderr(
    argv: list[str], problem: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main_server(argv, stdout=io.StringIO()) == 2
    assert problem in capsys.readouterr().err


def test_an_unknown_option_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main_server(["--frobnicate"], stdout=io.StringIO()) == 2
    assert "unrecognized arguments" in capsys.readouterr().err


@pytest.mark.slow
def test_an_unreachable_url_fails_the_checks_instead_of_crashing() -> None:
    out = io.StringIO()
    argv = ["--url", "tcp://127.0.0.1:9", "--only", "server.handshake.advertisement_shape"]
    assert main_server([*argv, "--timeout", "5"], stdout=out) == 1
    assert "could not connect" in out.getvalue() or "could not be started" in out.getvalue()


@pytest.mark.slow
def test_the_window_before_the_policy_is_set_with_policy_silence() -> None:
    """S-03: ``--policy-silence`` sets how long the kit watches before the policy Request."""
    out = io.StringIO()
    argv = ["--policy-silence", "0.4", "--only", "server.policy.idle_before_request", "--", *DEMO]
    assert main_server(argv, stdout=out) == 0
    assert "silent for 0.4 s before the policy" in out.getvalue()


def test_a_window_that_is_not_positive_is_a_usage_error(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main_server(["--policy-silence", "0", "--", *DEMO]) == 2
    assert "policy_silence must be positive" in capsys.readouterr().err


# --- python -m switchboard.conformance.cli, run as a real subprocess ------------------------

MODULE: Final = [sys.executable, "-m", "switchboard.conformance.cli"]
CONSOLE: Final = [sys.executable, "-m", "switchboard", "conformance"]
CLOSE: Final = "server.channels.close"


async def run_cli(argv: list[str]) -> tuple[int, str, str]:
    """Run a command line to its end (within 120 s); its exit status, stdout and stderr."""
    with anyio.fail_after(120):
        done = await anyio.run_process(argv, cwd=REPO, check=False)
    return done.returncode, done.stdout.decode(), done.stderr.decode()


def outcomes_of(report: dict[str, object]) -> dict[str, str]:
    sections = report["sections"]
    assert isinstance(sections, list)
    return {check["id"]: check["outcome"] for section in sections for check in section["checks"]}


@pytest.mark.slow
@pytest.mark.anyio
async def test_the_module_takes_the_suite_name_then_the_command_after_dashes_like_the_console() -> (
    None
):
    """``python -m switchboard.conformance.cli server [OPTIONS] -- CMD`` runs the demo as the
    target (the suite name is not taken for the command), and words after ``--`` that look
    like options (``--hello``) stay the command's, exactly as ``switchboard conformance
    server`` does."""
    command = [*DEMO, "--hello"]
    options = ["--json", "--only", CLOSE, "--policy-silence", "0.5"]
    code, out, _ = await run_cli([*MODULE, "server", *options, "--", *command])
    console_code, console_out, _ = await run_cli([*CONSOLE, "server", *options, "--", *command])
    report, console = json.loads(out), json.loads(console_out)
    assert (code, console_code) == (0, 0)
    assert report["target"] == console["target"] == " ".join(command)
    assert outcomes_of(report) == outcomes_of(console) == {CLOSE: "pass"}


@pytest.mark.slow
@pytest.mark.anyio
async def test_the_module_runs_the_documented_form_with_options_before_the_dashes() -> None:
    """The text report of ``... server --only CHECK -- CMD`` names the demo, not ``server``."""
    code, out, _ = await run_cli([*MODULE, "server", "--only", CLOSE, "--", *DEMO])
    assert code == 0
    assert out.splitlines()[0] == f"MCPL server conformance: {' '.join(DEMO)}"
    assert f"PASS  {CLOSE}" in out


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("argv", "problem"),
    [
        (["--only", CLOSE, "--", *DEMO], "name the suite first, server or host (got '--only')"),
        ([], "name the suite first, server or host (got nothing)"),
        (["connector", "--", *DEMO], "(got 'connector')"),
        (["server", "server", "--", *DEMO], "unexpected 'server' before --"),
    ],
)
async def test_the_module_refuses_a_command_line_it_would_have_to_guess_at(
    argv: list[str], problem: str
) -> None:
    """No suite name, or words before ``--`` as well as a command after it: exit 2 with a
    reason, and nothing is spawned (the old parse spawned ``server`` as the connector)."""
    code, out, err = await run_cli([*MODULE, *argv])
    assert code == 2
    assert problem in err
    assert out == ""


@pytest.mark.anyio
async def test_the_module_lists_the_server_checks_like_the_console() -> None:
    code, out, _ = await run_cli([*MODULE, "server", "--list"])
    assert code == 0
    assert tuple(out.split()) == server_check_ids()


def test_words_after_the_dashes_are_the_command_word_for_word() -> None:
    """A second ``--`` and kit-like options after the first belong to the command: the
    report names the target with them (the process exits at once, so the check fails)."""
    command = [sys.executable, "-c", "pass", "--json", "--", "--only", "x"]
    out = io.StringIO()
    argv = ["--only", "server.handshake.advertisement_shape", "--timeout", "10", "--", *command]
    assert main_server(argv, stdout=out) == 1
    assert out.getvalue().splitlines()[0] == f"MCPL server conformance: {' '.join(command)}"
