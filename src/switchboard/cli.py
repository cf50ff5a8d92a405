"""The ``switchboard`` command line.

``switchboard run --config FILE.toml`` runs the host for real; ``switchboard demo`` runs the
embedded default; ``switchboard agents ...`` manages the directory (docs/directory.md);
``switchboard --version`` prints the version. Logs go to stderr.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

import anyio

from switchboard import __version__
from switchboard.config import LOG_LEVELS, Config, ConfigError, demo_config, load_config
from switchboard.directory.cli import add_agents_parser, run_agents
from switchboard.runtime.logs import configure
from switchboard.store.sqlite.schema import create_private

_DESCRIPTION = (
    "Switchboard: an MCPL host between chat connectors and MCP agents. Start with "
    "'switchboard demo', check a config with 'switchboard check --config FILE', then "
    "'switchboard run --config FILE'."
)


def _log_level(value: str) -> str:
    if value.upper() not in LOG_LEVELS:
        raise argparse.ArgumentTypeError(
            f"{value!r} is not a log level; use one of {', '.join(LOG_LEVELS)}"
        )
    return value.upper()


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="switchboard", description=_DESCRIPTION)
    p.add_argument("--version", action="version", version=f"switchboard {__version__}")
    p.add_argument(
        "--log-level",
        default=None,
        type=_log_level,
        help="DEBUG, INFO, WARNING, ERROR or CRITICAL (default from config)",
    )
    p.add_argument(
        "--log-json",
        action="store_true",
        help="log one JSON object per line on stderr (default: log_format in the config)",
    )
    sub = p.add_subparsers(dest="command")
    run = sub.add_parser("run", help="run the host from a TOML config")
    run.add_argument("--config", required=True, help="path to the TOML config file")
    run.add_argument(
        "--agent",
        default=None,
        metavar="@NAME",
        help="over stdio: which configured agent this session is (default: the agent that "
        "owns default delivery)",
    )
    check = sub.add_parser(
        "check",
        help="validate a TOML config and say what it would run, without starting anything",
    )
    check.add_argument("--config", required=True, help="path to the TOML config file")
    status = sub.add_parser(
        "status", help="ask a running host for its status and print it as tables"
    )
    status.add_argument("--config", required=True, help="the TOML config the host runs with")
    status.add_argument("--json", action="store_true", help="print the /status JSON as it is")
    demo = sub.add_parser("demo", help="run the embedded default: a demo community and an agent")
    demo.add_argument("--store", default=None, help="SQLite file to keep (default: a temp file)")
    demo.add_argument(
        "--agent",
        choices=["scripted", "stdio"],
        default="scripted",
        help="scripted: a built-in agent answers; stdio: serve MCP for a real agent",
    )
    demo.add_argument(
        "--duration", type=float, default=12.0, help="seconds the scripted agent runs"
    )
    demo.add_argument("--interval", type=float, default=1.5, help="seconds between demo chatter")
    conf = sub.add_parser(
        "conformance",
        help="check an MCPL connector against MCPL 0.5 over the wire",
        description="switchboard conformance server [--json] [--junit FILE] [--url URL] -- CMD "
        "...  |  switchboard conformance host [--json] [--junit FILE] -- CMD {connector} ...",
    )
    conf.add_argument(
        "side", choices=["server", "host"], help="what to check: a connector or a host"
    )
    conf.add_argument("rest", nargs=argparse.REMAINDER, help="options and the command to check")
    add_agents_parser(sub)
    return p


def _kit_call(raw: list[str]) -> tuple[str | None, str, list[str]] | None:
    """``(log level, side, kit arguments)`` when ``raw`` asks for the conformance kit.

    The kit parses its own options and keeps everything after ``--`` as the command, so it is
    handed the words after ``conformance server|host`` untouched; only ``--log-level`` may come
    before ``conformance``.
    """
    level: str | None = None
    i = 0
    while i < len(raw) and raw[i].startswith("--log-level"):
        if raw[i] == "--log-level" and i + 1 < len(raw):
            level, i = raw[i + 1], i + 2
        elif raw[i].startswith("--log-level="):
            level, i = raw[i].partition("=")[2], i + 1
        else:
            return None
    if raw[i : i + 1] == ["conformance"] and raw[i + 1 : i + 2] in (["server"], ["host"]):
        return level, raw[i + 1], raw[i + 2 :]
    return None


def _check(path: str) -> int:
    """``switchboard check``: every problem of the config at ``path`` on stderr (exit 2), or a
    short summary of what ``run`` would start on stdout (exit 0). Nothing is started."""
    from switchboard.agents.http import plan_endpoint
    from switchboard.config.check import machine_problems, summary

    try:
        config = load_config(path)
    except ConfigError as exc:
        print(f"switchboard: {exc}", file=sys.stderr)
        return 2
    problems = machine_problems(config)
    problems.extend(_backend_problems(config))
    endpoint: str = config.agent.transport
    if endpoint == "http":
        try:
            endpoint = plan_endpoint(config.agent, config.agents or None).url()
        except ConfigError as exc:
            problems.extend(exc.problems)
    if problems:
        listed = "\n".join(f"  - {line}" for line in problems)
        counted = "1 problem" if len(problems) == 1 else f"{len(problems)} problems"
        print(f"switchboard: config file {path} has {counted}:", file=sys.stderr)
        print(listed, file=sys.stderr)
        return 2
    print(f"config file {path} is fine:")
    for line in summary(config, endpoint):
        print(f"  {line}")
    return 0


_NO_CLUSTER_EXTRA = (
    'store.backend = "postgres" needs the cluster extra, which is not installed: '
    "pip install 'switchboard[cluster]'"
)


def _backend_problems(config: Config) -> list[str]:
    """With ``backend = "postgres"``: whether the cluster extra is installed and the database
    answers. Asked by ``check`` and before ``run`` starts anything."""
    if config.store.backend != "postgres" or config.store.url is None:
        return []
    try:
        from switchboard.cluster.pg.probe import database_problem
    except ImportError:
        return [_NO_CLUSTER_EXTRA]
    problem = database_problem(config.store.url)
    return [] if problem is None else [problem]


def _agents_on_postgres(args: argparse.Namespace, url: str) -> int:
    """``switchboard agents`` against the directory in the PostgreSQL database at ``url``."""
    try:
        from switchboard.cluster.pg.directory import PgDirectoryDb
    except ImportError:
        print(f"switchboard: {_NO_CLUSTER_EXTRA}", file=sys.stderr)
        return 2
    from switchboard.directory import Directory

    return run_agents(args, lambda: Directory(PgDirectoryDb.open(url)))


def _status(path: str, *, as_json: bool) -> int:
    """``switchboard status``: 0 with the tables, 1 when nothing answers, 2 on a bad config."""
    import json

    from switchboard.status.http import StatusUnavailable, fetch_status, render_tables

    try:
        # Reading status needs no agent token: the agents' token variables may be unset here.
        snap = fetch_status(load_config(path, unset_secrets=True))
    except ConfigError as exc:
        print(f"switchboard: {exc}", file=sys.stderr)
        return 2
    except StatusUnavailable as exc:
        print(f"switchboard status: {exc}", file=sys.stderr)
        return 1
    print(json.dumps(snap, indent=2) if as_json else render_tables(snap))
    return 0


def main(argv: list[str] | None = None) -> int:
    raw = sys.argv[1:] if argv is None else argv
    kit = _kit_call(raw)
    if kit is not None:
        level, side, rest = kit
        configure(level or "ERROR")
        from switchboard.conformance.cli import main_host, main_server

        return main_server(rest) if side == "server" else main_host(rest)
    args = _parser().parse_args(raw)
    if args.command == "check":
        return _check(args.config)
    if args.command == "status":
        return _status(args.config, as_json=args.json)
    if args.command == "run":
        try:
            config = load_config(args.config)
        except ConfigError as exc:
            print(f"switchboard: {exc}", file=sys.stderr)
            return 2
        from switchboard.config.check import store_problem

        problems = [p for p in (store_problem(config),) if p is not None]
        problems.extend(_backend_problems(config))
        if problems:
            for problem in problems:
                print(f"switchboard: config file {args.config}: {problem}", file=sys.stderr)
            return 2
        configure(
            args.log_level or config.log_level,
            json=args.log_json or config.log_format == "json",
        )
        from switchboard.app.serve import serve_until_signalled

        try:
            anyio.run(lambda: serve_until_signalled(config, agent=args.agent))
        except ConfigError as exc:
            print(f"switchboard: {exc}", file=sys.stderr)
            return 2
        except KeyboardInterrupt:
            return 130
        return 0
    if args.command == "agents":
        try:
            config = load_config(args.config, unset_secrets=True)  # it only reads the store
        except ConfigError as exc:
            print(f"switchboard: {exc}", file=sys.stderr)
            return 2
        configure(args.log_level or "WARNING", json=args.log_json)
        if config.store.backend == "postgres" and config.store.url is not None:
            return _agents_on_postgres(args, config.store.url)
        try:
            create_private(config.store.path)  # 0600, as the host makes it
        except OSError as exc:
            print(f"switchboard: cannot create store {config.store.path!r}: {exc}", file=sys.stderr)
            return 1
        return run_agents(args, config.store.path)
    if args.command == "demo":
        configure(args.log_level or "WARNING", json=args.log_json)
        from switchboard.app.demo import run_demo

        with tempfile.TemporaryDirectory(prefix="switchboard-demo-") as tmp:
            store = args.store or str(Path(tmp) / "demo.sqlite")
            config = demo_config(store, interval=args.interval)
            try:
                code: int = anyio.run(
                    lambda: run_demo(
                        config,
                        agent_mode=args.agent,
                        duration=args.duration,
                        out=sys.stdout,
                        store_kept=args.store is not None,
                    )
                )
            except KeyboardInterrupt:
                # Only before the demo's own handler is in place (it makes Ctrl-C an orderly
                # stop); nothing had started.
                print("demo stopped by Ctrl-C before it began", file=sys.stderr)
                return 0
            return code
    _parser().print_help(sys.stderr)
    return 2


if __name__ == "__main__":
    raise SystemExit(main())
