"""A rate-limited log: the first occurrence of something in full, then counted summaries.

:class:`RateLimitedLog` is what a connection uses to report things a peer may repeat without
end (a junk line on stdout, a refused request): per key, the first occurrence is logged at
once; later ones are counted, and at most one summary line per ``interval`` says how many
there were since the last line (``count``) and in all (``total``). :meth:`RateLimitedLog.flush`
writes the summaries still owed (when the connection ends). Counting never stops, so
:meth:`RateLimitedLog.totals` is exact whatever was logged.

It knows structlog loggers and a monotonic clock. It deliberately knows nothing of what is
being counted: callers choose the key, the event name, the level and the fields. It starts no
task: a summary is written by the next occurrence after the interval, or by ``flush``.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

__all__ = ["DEFAULT_LOG_INTERVAL", "LogLevel", "RateLimitedLog"]

DEFAULT_LOG_INTERVAL = 60.0
"""Seconds between two summary lines for one key."""

LogLevel = Literal["debug", "info", "warning", "error"]


@dataclass(slots=True)
class _Seen:
    level: LogLevel
    event: str
    fields: dict[str, Any]
    total: int
    last_logged: float
    unlogged: int = 0


class RateLimitedLog:
    """Log per key: the first occurrence, then one summary per interval, with counts.

    Args:
        logger: a structlog (bound) logger; each level is called as a method on it.
        interval: least seconds between two lines for one key.
        clock: a monotonic clock in seconds.
    """

    def __init__(
        self,
        logger: Any,
        *,
        interval: float = DEFAULT_LOG_INTERVAL,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if interval < 0:
            raise ValueError("interval must not be negative")
        self._logger = logger
        self._interval = interval
        self._clock = clock
        self._seen: dict[Hashable, _Seen] = {}

    def note(
        self,
        key: Hashable,
        event: str,
        *,
        level: LogLevel = "warning",
        count: int = 1,
        **fields: Any,
    ) -> bool:
        """Count ``count`` occurrences under ``key``; log them if this key is due.

        The line carries ``fields`` (of the latest occurrence), ``count`` (occurrences since
        the key's previous line, this one included) and ``total`` (since the start).

        Returns:
            Whether a line was written.
        """
        now = self._clock()
        seen = self._seen.get(key)
        if seen is None:
            self._seen[key] = _Seen(level, event, dict(fields), count, now)
            getattr(self._logger, level)(event, count=count, total=count, **fields)
            return True
        seen.total += count
        seen.unlogged += count
        seen.level, seen.event, seen.fields = level, event, dict(fields)
        if now - seen.last_logged < self._interval:
            return False
        self._write(seen, now)
        return True

    def flush(self) -> None:
        """Write a summary for every key with occurrences not yet logged."""
        now = self._clock()
        for seen in self._seen.values():
            if seen.unlogged:
                self._write(seen, now)

    def totals(self) -> Mapping[Hashable, int]:
        """Every key's count since the start (a copy)."""
        return {key: seen.total for key, seen in self._seen.items()}

    def _write(self, seen: _Seen, now: float) -> None:
        getattr(self._logger, seen.level)(
            seen.event,
            count=seen.unlogged,
            total=seen.total,
            repeated=True,
            **seen.fields,
        )
        seen.unlogged = 0
        seen.last_logged = now
