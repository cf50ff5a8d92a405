"""Command line of the demo connector: ``python -m switchboard.connectors.demo``.

What this module knows: the options (see :class:`~.town.DemoOptions`), that logs go to
stderr, and that stdout is the MCPL wire — the only other bytes written there are the
deliberate non-JSON lines of ``--junk``, which a host must skip.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from switchboard.runtime.logs import configure

from .town import DemoConnector, DemoOptions

__all__ = ["main", "parse_options"]


def _non_negative(value: str) -> float:
    number = float(value)
    if number < 0:
        raise argparse.ArgumentTypeError("must be 0 or more")
    return number


def _positive(value: str) -> int:
    number = int(value)
    if number < 1:
        raise argparse.ArgumentTypeError("must be 1 or more")
    return number


def parse_options(argv: Sequence[str] | None = None) -> tuple[DemoOptions, str]:
    """Read the command line; returns the options and the log level."""
    parser = argparse.ArgumentParser(
        prog="python -m switchboard.connectors.demo",
        description="Demo Town: a simulated community that speaks MCPL over stdio.",
    )
    parser.add_argument(
        "--interval",
        type=_non_negative,
        default=2.0,
        help="seconds between ambient lines; 0 = only scripted messages (default 2.0)",
    )
    parser.add_argument("--seed", type=int, default=7, help="seed of the ambient script")
    parser.add_argument("--count", type=_positive, help="stop chatting after N ambient lines")
    parser.add_argument(
        "--junk", action="store_true", help="print non-JSON lines on stdout around the handshake"
    )
    parser.add_argument(
        "--hello", action="store_true", help="greet once right after registering the rooms"
    )
    parser.add_argument(
        "--fail-after", type=_positive, help="exit with code 3 after answering N publishes"
    )
    parser.add_argument("--log-level", default="INFO", help="stderr log level (default INFO)")
    args = parser.parse_args(argv)
    options = DemoOptions(
        interval=args.interval,
        seed=args.seed,
        count=args.count,
        junk=args.junk,
        hello=args.hello,
        fail_after=args.fail_after,
    )
    return options, args.log_level


def main(argv: Sequence[str] | None = None) -> None:
    """Run Demo Town on stdin/stdout until the host goes away."""
    options, level = parse_options(argv)
    configure(level)
    if options.junk:  # before the handshake, nothing else is writing to stdout yet
        sys.stdout.buffer.write(b"Demo Town connector starting up\nLogged in as demo-bot\n")
        sys.stdout.buffer.flush()
    DemoConnector(options).main()


if __name__ == "__main__":
    main()
