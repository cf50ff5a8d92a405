"""structlog set-up: every log line goes to stderr, never stdout.

stdout belongs to the MCP stdio transport (and, in a connector, to the MCPL wire), so nothing
here may write to it. :func:`configure` is idempotent and safe to call before anything else
constructs a logger.
"""

from __future__ import annotations

import logging
import sys

import structlog


def configure(level: str = "INFO", *, json: bool = False) -> None:
    """Route structlog and the stdlib ``logging`` module to stderr at ``level``."""
    numeric = logging.getLevelNamesMapping().get(level.upper(), logging.INFO)
    handler = logging.StreamHandler(sys.stderr)
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(numeric)
    renderer: structlog.typing.Processor = (
        structlog.processors.JSONRenderer() if json else structlog.dev.ConsoleRenderer(colors=False)
    )
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            renderer,
        ],
        wrapper_class=structlog.make_filtering_bound_logger(numeric),
        logger_factory=structlog.PrintLoggerFactory(file=sys.stderr),
        cache_logger_on_first_use=False,
    )
