"""The ``switchboard`` command line.

``switchboard run --config FILE.toml`` runs the host for real; ``switchboard demo`` runs the
embedded default; ``switchboard --version`` prints the version. Logs go to stderr.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

import anyio

from switchboard import __version__
from switchboard.config import ConfigError, demo_config, load_config
from switchboard.logging import configure


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="switchboard", description=__doc__.splitlines()[0])
    p.add_argument("--version", action="version", version=f"switchboard {__version__}")
    p.add_argument("--log-level", default=None, help="DEBUG, INFO, WARNING (default from config)")
    sub = p.add_subparsers(dest="command")
    run = sub.add_parser("run", help="run the host from a TOML config")
    run.add_argument("--config", required=True, help="path to the TOML config file")
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
    return p


def main(argv: list[str] | None = None) -> int:
    raw = sys.argv[1:] if argv is None else argv
    if raw[:2] == ["conformance", "server"]:
        # The kit parses its own options and keeps everything after `--` as the command.
        configure("ERROR")
        from switchboard.conformance.cli import main_server

        return main_server(raw[2:])
    if raw[:2] == ["conformance", "host"]:
        configure("ERROR")
        from switchboard.conformance.cli import main_host

        return main_host(raw[2:])
    args = _parser().parse_args(raw)
    if args.command == "run":
        try:
            config = load_config(args.config)
        except ConfigError as exc:
            print(f"switchboard: {exc}", file=sys.stderr)
            return 2
        configure(args.log_level or config.log_level)
        from switchboard.serve import serve

        anyio.run(serve, config)
        return 0
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
