"""Command line of the Matrix bridge: ``switchboard-matrix`` (``python -m ...matrix``).

What this module knows: the two ways to run it — serving a host over stdin/stdout (the
default; the host spawns it), and ``--check``, which reads the configuration, logs in and
prints what the bridge would bridge, then exits (0 when all is well). A configuration problem
ends either at once with exit code 2 and one line per problem on stderr, each with its fix.
Logs go to stderr: stdout is the MCPL wire.
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence

import aiohttp
import anyio
import structlog
from mautrix.api import HTTPAPI
from mautrix.client import ClientAPI
from mautrix.errors import MatrixError
from mautrix.types import UserID

import switchboard

from .bridge import MatrixBridge
from .config import ConfigProblems, MatrixConfig, load_config, read_token_file
from .state import StateDir

__all__ = ["main"]

EXIT_USAGE = 2


def configure_logging(level: str) -> None:
    """structlog and the stdlib ``logging`` (mautrix, aiohttp) to stderr at ``level``."""
    numeric = logging.getLevelNamesMapping().get(level, logging.INFO)
    structlog.configure(
        processors=[
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            structlog.dev.ConsoleRenderer(colors=False),
        ],
        wrapper_class=structlog.make_filtering_bound_logger(numeric),
        logger_factory=structlog.PrintLoggerFactory(file=sys.stderr),
        cache_logger_on_first_use=False,
    )
    # mautrix logs every request at DEBUG; its warnings and errors are worth seeing.
    logging.basicConfig(stream=sys.stderr, level=max(numeric, logging.WARNING))


def _token(config: MatrixConfig) -> str | None:
    if config.access_token is not None:
        return config.access_token
    if config.access_token_file is not None:
        return read_token_file(config.access_token_file)
    return None


async def _check(config: MatrixConfig, token: str | None) -> int:
    """Log in as the bridge would and say what it sees; returns the exit code."""
    if token is None:
        kept = StateDir(config.state_dir, config.user_id, config.homeserver).session()
        token = kept.access_token if kept is not None else None
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=30)) as session:
        api = ClientAPI(
            UserID(config.user_id),
            api=HTTPAPI(config.homeserver, token or "", client_session=session),
        )
        try:
            if token is None:
                print("no stored login yet: the bridge logs in with MATRIX_PASSWORD on start")
                await api.versions()
                print(f"ok: {config.homeserver} answers")
                return 0
            who = await api.whoami()
            rooms = await api.get_joined_rooms()
        except (MatrixError, aiohttp.ClientError, TimeoutError, OSError) as exc:
            print(f"failed: {config.homeserver}: {exc}", file=sys.stderr)
            return 1
    if who.user_id != config.user_id:
        print(
            f"failed: the access token belongs to {who.user_id}, not {config.user_id}",
            file=sys.stderr,
        )
        return 1
    print(f"ok: {who.user_id} on {config.homeserver}, in {len(rooms)} rooms")
    print(f"state directory: {config.state_dir}")
    print(f"accepting invitations from: {config.accept_invites.describe()}")
    return 0


def main(argv: Sequence[str] | None = None) -> None:
    """Run the bridge on stdin/stdout (or ``--check`` the configuration)."""
    parser = argparse.ArgumentParser(
        prog="switchboard-matrix",
        description="The Matrix bridge of Switchboard: an MCPL connector over stdio, "
        "configured by MATRIX_* environment variables (docs/bridges/matrix.md).",
    )
    parser.add_argument(
        "--check", action="store_true", help="check the configuration and the login, then exit"
    )
    parser.add_argument("--version", action="version", version=switchboard.__version__)
    args = parser.parse_args(argv)
    try:
        config = load_config()
        token = _token(config)
    except ConfigProblems as exc:
        for problem in exc.problems:
            print(f"switchboard-matrix: {problem}", file=sys.stderr)
        sys.exit(EXIT_USAGE)
    configure_logging(config.log_level)
    if args.check:
        sys.exit(anyio.run(_check, config, token))
    MatrixBridge(config, token).main()


if __name__ == "__main__":
    main()
