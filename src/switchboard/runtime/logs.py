"""structlog set-up: every log line goes to stderr, never stdout, in one format.

stdout belongs to the MCP stdio transport (and, in a connector, to the MCPL wire).
:func:`configure` is idempotent and renders the stdlib's records (uvicorn, the MCP SDK) with the
same renderer as Switchboard's own events, as ``console`` lines or ``json`` objects; a hot path
asks :func:`enabled_for` before building a line. A traceback is rendered as Python prints it,
never with the frames' local variables: a request's frames hold its headers, and so the agent's
bearer token.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable
from functools import partial
from operator import attrgetter
from typing import Final, Literal

import structlog

__all__ = ["LOG_FORMATS", "LogFormat", "configure", "enabled_for"]

LogFormat = Literal["console", "json"]

LOG_FORMATS: Final[tuple[LogFormat, ...]] = ("console", "json")
"""The values of ``log_format``."""


def configure(level: str = "INFO", *, json: bool = False) -> None:
    """Route structlog and the stdlib ``logging`` module to stderr at ``level``, one format.

    stdout belongs to the MCP stdio transport (and, in a connector, to the MCPL wire), so nothing
    here may write to it. :func:`configure` is idempotent and safe to call before anything else
    constructs a logger.

    What it knows: the two formats (:data:`LOG_FORMATS`: ``console``, one ``key=value`` line per
    event, and ``json``, one JSON object per line), and that records of the stdlib ``logging``
    module (uvicorn, the MCP SDK, Python warnings) are rendered by the same structlog renderer as
    Switchboard's own events: the root logger's one stderr handler carries a
    ``structlog.stdlib.ProcessorFormatter``. A stdlib record's message becomes the ``event`` and its
    logger's name ``logger``. In JSON mode an exception is rendered into the line (``exception``, a
    string with ``\\n`` escaped), so every line parses as JSON.

    Switchboard's own events do not pass through the stdlib: structlog writes each one to stderr in
    a single ``write`` (the hot paths pay only for the renderer). Loggers are not cached on first
    use (tests reconfigure structlog), so even a call filtered out costs a ``bind`` (~5 µs); a hot
    path asks :func:`enabled_for` first (~0.5 µs, and it follows a reconfiguration).

    Args:
        level: a level name (``DEBUG``, ``INFO``, ``WARNING``, ``ERROR``); unknown: INFO.
        json: one JSON object per line instead of the console format.
    """
    numeric = logging.getLevelNamesMapping().get(level.upper(), logging.INFO)
    timestamper = structlog.processors.TimeStamper(fmt="iso", utc=True)
    renderer: structlog.typing.Processor = (
        structlog.processors.JSONRenderer()
        if json
        else _text_below(
            structlog.dev.ConsoleRenderer(
                colors=False,
                # Without locals: a request's frames hold its headers, and so its bearer token.
                exception_formatter=structlog.dev.plain_traceback,
            )
        )
    )
    # In JSON mode a traceback becomes a field of the one line; the console renderer prints
    # it below the line itself.
    exceptions: list[structlog.typing.Processor] = (
        [structlog.processors.format_exc_info] if json else []
    )
    handler = logging.StreamHandler(sys.stderr)
    # A library logger with a level of its own (uvicorn sets one) still stops at ``level``.
    handler.setLevel(numeric)
    handler.setFormatter(
        structlog.stdlib.ProcessorFormatter(
            foreign_pre_chain=[
                structlog.stdlib.add_log_level,
                structlog.stdlib.add_logger_name,
                _plain_logger_name,
                timestamper,
            ],
            processors=[
                structlog.stdlib.ProcessorFormatter.remove_processors_meta,
                *exceptions,
                renderer,
            ],
        )
    )
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(numeric)
    logging.captureWarnings(True)
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            structlog.processors.add_log_level,
            timestamper,
            *exceptions,
            renderer,
        ],
        wrapper_class=structlog.make_filtering_bound_logger(numeric),
        logger_factory=structlog.WriteLoggerFactory(file=sys.stderr),
        cache_logger_on_first_use=False,
    )


#: Fields whose text a console line prints below itself, one indented line each, when it has
#: several lines (a connector's stderr, a traceback it printed): escaped into one
#: ``line="...\\n..."`` they could not be read.
TEXT_BELOW: Final = frozenset({"line", "stderr"})

_RENAMED: Final = {"uvicorn.error": "uvicorn"}
"""uvicorn logs everything it says (``Application startup complete.``) on ``uvicorn.error``; an
INFO line tagged ``[uvicorn.error]`` reads as an error."""


def _plain_logger_name(
    _logger: object, _name: str, event: structlog.typing.EventDict
) -> structlog.typing.EventDict:
    name = event.get("logger")
    if isinstance(name, str) and name in _RENAMED:
        event["logger"] = _RENAMED[name]
    return event


def _text_below(render: structlog.dev.ConsoleRenderer) -> structlog.typing.Processor:
    """``render`` (the console renderer), with each multi-line :data:`TEXT_BELOW` field taken
    out of the ``key=value`` part and printed below the line, each of its lines indented and
    marked ``|`` (so it cannot pass for a line of Switchboard's own)."""

    def rendered(logger: object, name: str, event: structlog.typing.EventDict) -> str:
        blocks = [
            (key, event.pop(key))
            for key in [k for k in TEXT_BELOW if isinstance(event.get(k), str)]
            if "\n" in event[key]
        ]
        head = render(logger, name, event)
        if not blocks:
            return head
        lines = [head]
        for key, text in blocks:
            lines.append(f"    {key}:")
            lines.extend(f"    | {part}" for part in str(text).splitlines())
        return "\n".join(lines)

    return rendered


_LEVELS: Final = (
    logging.NOTSET,
    logging.DEBUG,
    logging.INFO,
    logging.WARNING,
    logging.ERROR,
    logging.CRITICAL,
)
_FILTERING: dict[object, int] = {}


def _configured_wrapper() -> object:
    """structlog's configured wrapper class, as ``structlog.get_config()["wrapper_class"]``."""
    return structlog.get_config()["wrapper_class"]


def _live_wrapper() -> Callable[[], object]:
    """The cheapest way to read the configured wrapper class now.

    ``get_config()`` builds a dict of the whole configuration on every call, about a third of
    a microsecond, once per confirmed publish. structlog keeps the configuration
    in one module-level object that ``configure`` updates in place; where it is found, and
    agrees with ``get_config()``, its attribute is read instead (tests/runtime/test_logs_enabled.py
    holds the two to agreement across reconfigurations). Anywhere else, ``get_config()``.
    """
    held = getattr(getattr(structlog, "_config", None), "_CONFIG", None)
    if held is None or getattr(held, "default_wrapper_class", None) is not _configured_wrapper():
        return _configured_wrapper
    return partial(attrgetter("default_wrapper_class"), held)


_wrapper: Final = _live_wrapper()


def enabled_for(level: int) -> bool:
    """Whether an event at ``level`` would pass structlog's configured level filter now.

    For a hot path, to skip a filtered call cheaply. It reads the configuration each time, so
    it follows ``structlog.configure`` (tests that capture debug events). A wrapper class other
    than :func:`structlog.make_filtering_bound_logger`'s is not known to filter: True.
    """
    if not _FILTERING:
        _FILTERING.update({structlog.make_filtering_bound_logger(lv): lv for lv in _LEVELS})
    floor = _FILTERING.get(_wrapper())
    return floor is None or level >= floor
