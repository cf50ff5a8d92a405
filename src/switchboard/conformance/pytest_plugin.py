"""A pytest plugin that adds the MCPL server suite to a connector author's own tests.

Enable it with ``pytest -p switchboard.conformance.pytest_plugin``; it provides the
``mcpl_server_suite`` fixture (a :class:`ServerSuite` bound to ``--mcpl-server``) and the
``mcpl_server_check`` fixture, parametrized over every server check id, so one test becomes one
test per check (docs/conformance.md has examples).

What it deliberately does not know: how checks run (:mod:`.server_suite`) or what they test.
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence

import anyio
import pytest

from .common.outcomes import CheckResult, Outcome
from .common.report import Report, frame_lines, render_text
from .server_suite import SuiteOptions, run_server_suite, server_check_ids
from .target import ServerTarget

__all__ = [
    "ServerSuite",
    "mcpl_server_check",
    "mcpl_server_suite",
    "pytest_addoption",
    "pytest_generate_tests",
]

Target = ServerTarget | Sequence[str] | str


class ServerSuite:
    """Runs the server suite for a test.

    Enable it with ``pytest -p switchboard.conformance.pytest_plugin`` (or ``pytest_plugins =
    ["switchboard.conformance.pytest_plugin"]`` in a top-level ``conftest.py``). It provides:

    - the ``mcpl_server_suite`` fixture, a :class:`ServerSuite` bound to the command line option
      ``--mcpl-server`` (a command, split like a shell would, or a ``tcp://``/``ws://`` URL) or to
      any target a test passes explicitly;
    - the ``mcpl_server_check`` fixture, parametrized over every server check id, so one test
      function becomes one test per check (a failure shows that check's message exchange; a check
      that is not exercised or not applicable is skipped with its reason).

    Example::

        CONNECTOR = [sys.executable, "-m", "my_connector"]

        def test_my_connector_passes_the_whole_suite(mcpl_server_suite):
            report = mcpl_server_suite.run(CONNECTOR)
            mcpl_server_suite.assert_conformant(report)

        def test_each_check(mcpl_server_suite, mcpl_server_check):
            mcpl_server_suite.check(CONNECTOR, mcpl_server_check)

    To run only some checks, parametrize yourself over
    :func:`~switchboard.conformance.server_suite.server_check_ids` (or a subset of it) with
    ``@pytest.mark.parametrize("check_id", [...])`` and call ``mcpl_server_suite.check``. ``run``
    and ``check`` start their own event loop; from an async test use ``arun``.

    What it knows: pytest's hooks, fixtures and outcomes. What it deliberately does not know: how
    checks run (:mod:`.server_suite`) or what they test.

    Args:
        default: the target used when a call names none (from ``--mcpl-server``).
        options: timing and concurrency of every run.
    """

    def __init__(self, default: ServerTarget | None, options: SuiteOptions | None = None) -> None:
        self.default = default
        self.options = options

    def _target(self, target: Target | None) -> Target:
        if target is not None:
            return target
        if self.default is None:
            pytest.skip("no MCPL server to test: pass a target or use --mcpl-server")
        return self.default

    async def arun(
        self, target: Target | None = None, *, only: Sequence[str] | None = None
    ) -> Report:
        """Run the suite (or the ``only`` checks) and return the report."""
        return await run_server_suite(self._target(target), only=only, options=self.options)

    def run(self, target: Target | None = None, *, only: Sequence[str] | None = None) -> Report:
        """Like :meth:`arun`, in an event loop of its own (call it from a sync test)."""
        chosen = self._target(target)
        return anyio.run(lambda: run_server_suite(chosen, only=only, options=self.options))

    @staticmethod
    def assert_conformant(report: Report) -> None:
        """Fail the test when a MUST check failed, showing the whole report."""
        if report.must_failures:
            pytest.fail(render_text(report), pytrace=False)

    def check(self, target: Target | None, check_id: str) -> CheckResult:
        """Run one check: fail on failure, skip when not exercised or not applicable."""
        result = self.run(target, only=[check_id])[check_id]
        if result.outcome is Outcome.FAIL:
            exchange = "\n".join(frame_lines(result.frames))
            pytest.fail(
                f"{check_id} [{','.join(result.requirements)} {result.level}]: "
                f"{result.message}\n{exchange}",
                pytrace=False,
            )
        if result.outcome in (Outcome.NOT_EXERCISED, Outcome.NOT_APPLICABLE):
            pytest.skip(f"{result.outcome.value.replace('_', ' ')}: {result.message}")
        return result


def pytest_addoption(parser: pytest.Parser) -> None:
    """``--mcpl-server``: the connector the suite tests by default."""
    group = parser.getgroup("mcpl", "MCPL conformance")
    group.addoption(
        "--mcpl-server",
        default=None,
        help="MCPL server under test: a command line (shell-split) or tcp:// / ws:// URL",
    )


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """One test per server check for tests that take ``mcpl_server_check``."""
    if "mcpl_server_check" in metafunc.fixturenames:
        ids = server_check_ids()
        metafunc.parametrize("mcpl_server_check", ids, ids=list(ids))


def _configured_target(config: pytest.Config) -> ServerTarget | None:
    value = config.getoption("--mcpl-server")
    if not value:
        return None
    if value.startswith(("tcp://", "ws://", "wss://")):
        return ServerTarget(url=value)
    return ServerTarget(command=tuple(shlex.split(value)))


@pytest.fixture
def mcpl_server_suite(request: pytest.FixtureRequest) -> ServerSuite:
    """A :class:`ServerSuite` bound to ``--mcpl-server`` (if given)."""
    return ServerSuite(_configured_target(request.config))


@pytest.fixture
def mcpl_server_check(request: pytest.FixtureRequest) -> str:
    """The check id of this parametrized test (see :func:`pytest_generate_tests`)."""
    check_id: str = request.param
    return check_id
