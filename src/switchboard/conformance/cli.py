"""The command lines of the suites: ``switchboard conformance server|host ...``.

:func:`main` reads the suite's options, runs it against the command (or URL) under test, and
writes the report to stdout (terminal text, or JSON with ``--json``; JUnit XML with
``--junit``). Everything after the first ``--`` is the command under test, word for word. The
exit status is 1 when a MUST check failed, 2 on a usage error, else 0 (docs/conformance.md).

What it deliberately does not know: how checks run (:mod:`.server_suite`) or how reports are
laid out.
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TextIO

import anyio
import structlog

from .common.junit import write_junit
from .common.report import render_json, render_text
from .host_suite import HostTarget, host_check_ids, run_host_suite
from .server_suite import SuiteOptions, run_server_suite, server_check_ids
from .target import ServerTarget

__all__ = ["main", "main_host", "main_server"]

USAGE_ERROR = 2

_MODULE_USAGE = (
    "usage: python -m switchboard.conformance.cli server [OPTIONS] (--url URL | -- CMD ARGS...)\n"
    "       python -m switchboard.conformance.cli host [OPTIONS] -- HOST-CMD ARGS...\n"
    "(the same as `switchboard conformance server|host ...`; add --help after the suite name "
    "for its options)\n"
)


def _parse(parser: argparse.ArgumentParser, argv: Sequence[str]) -> argparse.Namespace:
    """The kit's options before the first ``--``, and everything after it as the command.

    Split by hand rather than by argparse, so that the command is taken word for word: a
    ``--json`` or a second ``--`` after the first ``--`` belongs to the command under test.

    Raises:
        SystemExit: argparse refused the options (it printed why), or ``--help``.
        ValueError: words that are no option stand before ``--`` as well as a command after.
    """
    words = list(argv)
    if "--" not in words:
        return parser.parse_args(words)
    split = words.index("--")
    args = parser.parse_args(words[:split])
    if args.command:
        raise ValueError(
            f"unexpected {' '.join(args.command)!r} before --: put the kit's options before "
            "--, and the whole command after it"
        )
    args.command = words[split + 1 :]
    return args


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="switchboard conformance server",
        description="Check an MCPL connector (server) against MCPL 0.5, the kit playing host.",
    )
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    parser.add_argument("--junit", metavar="FILE", help="also write a JUnit XML report")
    parser.add_argument("--url", help="tcp://host:port, ws://... or wss://... instead of a command")
    parser.add_argument(
        "--only", action="append", metavar="CHECK", help="run only this check (repeatable)"
    )
    parser.add_argument("--timeout", type=float, default=30.0, help="seconds per check")
    parser.add_argument(
        "--silence",
        type=float,
        default=2.0,
        help="seconds to watch for what must not happen (default 2)",
    )
    parser.add_argument(
        "--policy-silence",
        type=float,
        default=SuiteOptions().policy_silence,
        help=(
            "seconds to watch the connector before the policy Request, and after one that "
            "grants nothing (S-03, S-04, S-09; default 6: longer than a 5 s timer)"
        ),
    )
    parser.add_argument("--concurrency", type=int, help="checks run at once")
    parser.add_argument("--list", action="store_true", help="list the check ids and exit")
    parser.add_argument("command", nargs="*", help="the connector command, after --")
    return parser


def _quiet_logging() -> None:
    """Keep logs on stderr: stdout carries the report (and ``--json`` must stay parseable)."""
    if not structlog.is_configured():
        structlog.configure(
            logger_factory=structlog.PrintLoggerFactory(file=sys.stderr),
            wrapper_class=structlog.make_filtering_bound_logger(logging.ERROR),
        )


def main_server(argv: Sequence[str], *, stdout: TextIO | None = None) -> int:
    """Run ``switchboard conformance server`` with ``argv``; return the exit status."""
    out = sys.stdout if stdout is None else stdout
    try:
        args = _parse(_parser(), argv)
    except SystemExit as exc:  # argparse printed the problem (or --help) already
        return USAGE_ERROR if exc.code else 0
    except ValueError as exc:
        sys.stderr.write(f"switchboard conformance server: {exc}\n")
        return USAGE_ERROR
    if args.list:
        out.write("\n".join(server_check_ids()) + "\n")
        return 0
    try:
        if args.url is not None and args.command:
            raise ValueError("give either --url or a command after --, not both")
        if args.url is None and not args.command:
            raise ValueError("give the connector command after --, or --url")
        target = ServerTarget(url=args.url) if args.url else ServerTarget.of(args.command)
        options = SuiteOptions(
            check_timeout=args.timeout,
            silence=args.silence,
            policy_silence=args.policy_silence,
            concurrency=args.concurrency,
        )
        unknown = [c for c in args.only or () if c not in server_check_ids()]
        if unknown:
            raise ValueError(f"unknown check ids: {', '.join(unknown)}")
    except ValueError as exc:
        sys.stderr.write(f"switchboard conformance server: {exc}\n")
        return USAGE_ERROR
    _quiet_logging()
    report = anyio.run(lambda: run_server_suite(target, only=args.only, options=options))
    out.write(render_json(report) if args.json else render_text(report))
    if args.junit:
        write_junit(report, Path(args.junit))
    return report.exit_code


def _host_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="switchboard conformance host",
        description="Check an MCPL host against MCPL 0.5, the kit playing a connector. "
        "The host command must contain {connector}, replaced by the kit connector's argv, or "
        "{url}, replaced by tcp://127.0.0.1:PORT for a host that dials its connectors.",
    )
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    parser.add_argument("--junit", metavar="FILE", help="also write a JUnit XML report")
    parser.add_argument(
        "--only", action="append", metavar="CHECK", help="run only this check (repeatable)"
    )
    parser.add_argument("--timeout", type=float, default=30.0, help="seconds per check")
    parser.add_argument(
        "--silence", type=float, default=2.0, help="seconds to watch for what must not happen"
    )
    parser.add_argument("--concurrency", type=int, help="host processes run at once (default 4)")
    parser.add_argument("--list", action="store_true", help="list the check ids and exit")
    parser.add_argument("command", nargs="*", help="the host command, after --")
    return parser


def main_host(argv: Sequence[str], *, stdout: TextIO | None = None) -> int:
    """Run ``switchboard conformance host`` with ``argv``; return the exit status."""
    out = sys.stdout if stdout is None else stdout
    try:
        args = _parse(_host_parser(), argv)
    except SystemExit as exc:
        return USAGE_ERROR if exc.code else 0
    except ValueError as exc:
        sys.stderr.write(f"switchboard conformance host: {exc}\n")
        return USAGE_ERROR
    if args.list:
        out.write("\n".join(host_check_ids()) + "\n")
        return 0
    try:
        target = HostTarget.of(args.command)
        options = SuiteOptions(
            check_timeout=args.timeout, silence=args.silence, concurrency=args.concurrency
        )
        unknown = [c for c in args.only or () if c not in host_check_ids()]
        if unknown:
            raise ValueError(f"unknown check ids: {', '.join(unknown)}")
    except ValueError as exc:
        sys.stderr.write(f"switchboard conformance host: {exc}\n")
        return USAGE_ERROR
    _quiet_logging()
    report = anyio.run(lambda: run_host_suite(target, only=args.only, options=options))
    out.write(render_json(report) if args.json else render_text(report))
    if args.junit:
        write_junit(report, Path(args.junit))
    return report.exit_code


_SUITES = {"server": main_server, "host": main_host}


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``python -m switchboard.conformance.cli server|host ...``; return the exit status.

    Usage (``argv`` is what follows ``conformance server`` or ``conformance host``)::

        switchboard conformance server [--json] [--junit FILE] [--only CHECK]... \\
            [--timeout S] [--silence S] [--policy-silence S] [--list] (--url URL | -- CMD ARGS...)
        switchboard conformance host [--json] [--junit FILE] [--only CHECK]... \\
            [--timeout S] [--silence S] [--list] -- HOST-CMD ARGS...  # an ARG is {connector}|{url}

    ``python -m switchboard.conformance.cli server|host ...`` is the same command (:func:`main`):
    the first argument names the suite, and without one it is a usage error, never a guess.
    Everything after the first ``--`` is the command under test, word for word (options that look
    like the kit's, and further ``--``, included); the kit's options go before it.

    The report goes to stdout (terminal text, or JSON with ``--json``); ``--junit FILE`` also writes
    JUnit XML. The exit status is 1 when a MUST check failed, 2 on a usage error, else 0. Logs go to
    stderr, never to stdout.

    What it knows: options, output streams and exit codes. What it deliberately does not know: how
    checks run (:mod:`.server_suite`) or how reports are laid out.

    The first argument names the suite and the rest goes to :func:`main_server` or
    :func:`main_host` exactly as ``switchboard conformance server|host`` passes it. Anything
    else is a usage error that shows both forms (``-h``/``--help`` shows them and exits 0).
    """
    words = list(sys.argv[1:] if argv is None else argv)
    if words and words[0] in _SUITES:
        return _SUITES[words[0]](words[1:])
    if words and words[0] in ("-h", "--help"):
        sys.stdout.write(_MODULE_USAGE)
        return 0
    got = f"got {words[0]!r}" if words else "got nothing"
    sys.stderr.write(f"{_MODULE_USAGE}error: name the suite first, server or host ({got})\n")
    return USAGE_ERROR


if __name__ == "__main__":
    raise SystemExit(main())
