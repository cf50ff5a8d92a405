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
from switchboard.config import ConfigError, demo_config, load_config
from switchboard.directory.cli import add_agents_parser, run_agents
from switchboard.logging import configure
from switchboard.store.schema import create_private


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="switchboard", description=__doc__.splitlines()[0])
    p.add_argument("--version", action="version", version=f"switchboard {__version__}")
    p.add_argument("--log-level", default=None, help="DEBUG, INFO, WARNING (default from config)")
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


def main(argv: list[str] | None = None) -> int:
    raw = sys.argv[1:] if argv is None else argv
    kit = _kit_call(raw)
    if kit is not None:
        level, side, rest = kit
        configure(level or "ERROR")
        from switchboard.conformance.cli import main_host, main_server

        return main_server(rest) if side == "server" else main_host(rest)
    args = _parser().parse_args(raw)
    if args.command == "run":
        try:
            config = load_config(args.config)
        except ConfigError as exc:
            print(f"switchboard: {exc}", file=sys.stderr)
            return 2
        configure(args.log_level or config.log_level)
        from switchboard.serve import serve_until_signalled

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
            config = load_config(args.config)
        except ConfigError as exc:
            print(f"switchboard: {exc}", file=sys.stderr)
            return 2
        configure(args.log_level or "WARNING")
        try:
            create_private(config.store.path)  # 0600, as the host makes it
        except OSError as exc:
            print(f"switchboard: cannot create store {config.store.path!r}: {exc}", file=sys.stderr)
            return 1
        return run_agents(args, config.store.path)
    if args.command == "demo":
        configure(args.log_level or "WARNING")
        from switchboard.demo import run_demo

        with tempfile.TemporaryDirectory(prefix="switchboard-demo-") as tmp:
            store = args.store or str(Path(tmp) / "demo.sqlite")
            config = demo_config(store, interval=args.interval)
            code: int = anyio.run(
                lambda: run_demo(
                    config, agent_mode=args.agent, duration=args.duration, out=sys.stdout
                )
            )
            return code
    _parser().print_help(sys.stderr)
    return 2


if __name__ == "__main__":
    raise SystemExit(main())
