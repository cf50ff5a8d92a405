"""Logging what a peer may repeat or spill without end: counted summaries, budgets, joined lines.

:class:`RateLimitedLog` logs a key's first occurrence and then one counted summary per interval
(fields named ``summed`` added up over what it covers), and restarts for a new connection of the
same peer while its counts go on; :class:`VolumeBudget` bounds the bytes a peer may have logged;
:class:`LineJoiner` joins a peer's stderr lines into blocks (a traceback is one event). Why: a
misbehaving connector must not flood the host's log, and nothing it did may go uncounted.

It deliberately knows nothing of what is being counted, and starts no task.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

__all__ = [
    "DEFAULT_LOG_INTERVAL",
    "LineJoiner",
    "LogLevel",
    "RateLimitedLog",
    "VolumeBudget",
]

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
    #: The summed fields' totals over the occurrences not logged yet.
    sums: dict[str, Any] | None = None


class RateLimitedLog:
    """Log per key: the first occurrence, then one summary per interval, with counts.

    :class:`RateLimitedLog` is what a connection uses to report things a peer may repeat without end
    (a junk line on stdout, a refused request): per key, the first occurrence is logged at once;
    later ones are counted, and at most one summary line per ``interval`` says how many there were
    since the last line (``count``) and in all (``total``). :meth:`RateLimitedLog.flush` writes the
    summaries still owed (when the connection ends). Counting never stops, so
    :meth:`RateLimitedLog.totals` is exact whatever was logged.

    :class:`VolumeBudget` is a token bucket of bytes: what a peer may have logged in a burst and per
    second after it (a connector's stderr); what is over budget is counted instead, through a
    :class:`RateLimitedLog`.

    :class:`LineJoiner` turns the lines a peer writes (its stderr) into blocks, one log event each:
    lines that arrive within ``window`` seconds of the one before, and the continuation lines of a
    Python ``Traceback (most recent call last):`` block (indented lines, the chained-exception
    markers, and the final ``SomeError: ...`` line) join the block; a block holds at most
    ``max_lines`` lines and ``max_bytes`` bytes, then a new one starts. It is pure: the caller feeds
    it lines with the time they arrived, asks :meth:`LineJoiner.deadline` when the pending block is
    due, and emits what it returns.

    It knows structlog loggers and a monotonic clock. It deliberately knows nothing of what is being
    counted: callers choose the key, the event name, the level and the fields. It starts no task: a
    summary is written by the next occurrence after the interval, or by ``flush``.

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
        # The totals of keys forgotten by restart(), so totals() still counts them.
        self._earlier: dict[Hashable, int] = {}
        #: Occurrences noted since the start (the ``count`` of every call).
        self.noted = 0
        #: Lines written since the start (first occurrences and summaries).
        self.lines = 0

    def note(
        self,
        key: Hashable,
        event: str,
        *,
        level: LogLevel = "warning",
        count: int = 1,
        summed: tuple[str, ...] = (),
        **fields: Any,
    ) -> bool:
        """Count ``count`` occurrences under ``key``; log them if this key is due.

        The line carries ``fields`` (of the latest occurrence), ``count`` (occurrences since
        the key's previous line, this one included) and ``total`` (since the start); a field
        named in ``summed`` (a number) carries its sum over the occurrences since that line.

        Returns:
            Whether a line was written.
        """
        now = self._clock()
        self.noted += count
        seen = self._seen.get(key)
        if seen is None:
            self._seen[key] = _Seen(level, event, dict(fields), count, now)
            self.lines += 1
            getattr(self._logger, level)(event, count=count, total=count, **fields)
            return True
        seen.total += count
        seen.unlogged += count
        seen.level, seen.event, seen.fields = level, event, dict(fields)
        if summed:
            sums = seen.sums if seen.sums is not None else {}
            for name in summed:
                sums[name] = sums.get(name, 0) + fields[name]
            seen.sums = sums
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

    def restart(self) -> None:
        """Write the summaries still owed, then forget every key: the next occurrence of each
        is logged in full again (a new connection of the same peer is told as such).
        :meth:`totals` keeps counting across."""
        self.flush()
        earlier = self._earlier
        for key, seen in self._seen.items():
            earlier[key] = earlier.get(key, 0) + seen.total
        self._seen.clear()

    def totals(self) -> Mapping[Hashable, int]:
        """Every key's count since the start (a copy)."""
        counted = dict(self._earlier)
        for key, seen in self._seen.items():
            counted[key] = counted.get(key, 0) + seen.total
        return counted

    def _write(self, seen: _Seen, now: float) -> None:
        fields = seen.fields if not seen.sums else {**seen.fields, **seen.sums}
        self.lines += 1
        getattr(self._logger, seen.level)(
            seen.event,
            count=seen.unlogged,
            total=seen.total,
            repeated=True,
            **fields,
        )
        seen.unlogged = 0
        seen.sums = None
        seen.last_logged = now


class VolumeBudget:
    """A token bucket of bytes: ``burst`` at once, refilled at ``per_second``.

    Args:
        burst: the most bytes that may be spent at once (the bucket starts full).
        per_second: bytes added back each second, up to ``burst``.
        clock: a monotonic clock in seconds.
    """

    def __init__(
        self,
        *,
        burst: int,
        per_second: float,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if burst <= 0 or per_second < 0:
            raise ValueError("burst must be positive and per_second not negative")
        self._burst = float(burst)
        self._rate = per_second
        self._clock = clock
        self._tokens = float(burst)
        self._at = clock()

    def take(self, size: int) -> bool:
        """Spend ``size`` bytes if the bucket holds them; ``False`` (nothing spent) if not."""
        now = self._clock()
        self._tokens = min(self._burst, self._tokens + (now - self._at) * self._rate)
        self._at = now
        if size > self._tokens:
            return False
        self._tokens -= size
        return True


_TRACEBACK = "Traceback (most recent call last):"
_CHAIN_MARKERS = (
    "During handling of the above exception, another exception occurred:",
    "The above exception was the direct cause of the following exception:",
    _TRACEBACK,
)


class LineJoiner:
    """Join lines into blocks: a burst of lines, or a traceback, is one block.

    Args:
        window: seconds after a line within which the next line joins its block.
        traceback_window: the same, while a traceback is still open (its final line not
            yet seen).
        max_lines: the most lines in one block.
        max_bytes: the most UTF-8 bytes in one block (a longer single line is cut).
    """

    def __init__(
        self,
        *,
        window: float = 0.05,
        traceback_window: float = 1.0,
        max_lines: int = 200,
        max_bytes: int = 16 * 1024,
    ) -> None:
        if window < 0 or traceback_window < 0 or max_lines < 1 or max_bytes < 64:
            raise ValueError("windows must not be negative, max_lines >= 1, max_bytes >= 64")
        self._window = window
        self._traceback_window = traceback_window
        self._max_lines = max_lines
        self._max_bytes = max_bytes
        self._lines: list[str] = []
        self._size = 0
        self._last = 0.0
        self._in_traceback = False

    @property
    def pending(self) -> bool:
        """Whether a block is waiting to be emitted."""
        return bool(self._lines)

    def deadline(self) -> float | None:
        """When the pending block is due if no line joins it (``None``: nothing pending)."""
        if not self._lines:
            return None
        return self._last + (self._traceback_window if self._in_traceback else self._window)

    def add(self, line: str, now: float) -> list[str]:
        """Take one line that arrived at ``now``; return the blocks it completed (0 to 2)."""
        done: list[str] = []
        line = self._cut(line)
        size = len(line.encode("utf-8")) + 1
        if self._lines:
            joins = self._in_traceback or now <= self._last + self._window
            if line.startswith(_TRACEBACK) and not self._after_chain_marker():
                joins = False  # a traceback starts its own block
            full = len(self._lines) >= self._max_lines or self._size + size > self._max_bytes
            if not joins or full:
                done.append(self._take())
        if line.startswith(_TRACEBACK):
            self._in_traceback = True
        elif self._in_traceback and not self._indented_or_marker(line):
            self._in_traceback = False  # the final ``SomeError: ...`` line
        self._lines.append(line)
        self._size += size
        self._last = now
        return done

    def flush(self) -> str | None:
        """The pending block, if any, now (a traceback still open is closed)."""
        self._in_traceback = False
        return self._take() if self._lines else None

    def _after_chain_marker(self) -> bool:
        """Whether the last non-blank pending line says another traceback follows."""
        for previous in reversed(self._lines):
            if previous.strip():
                return previous.startswith(_CHAIN_MARKERS[:2])
        return False

    @staticmethod
    def _indented_or_marker(line: str) -> bool:
        return not line or line[0] in " \t" or line.startswith(_CHAIN_MARKERS)

    def _cut(self, line: str) -> str:
        encoded = line.encode("utf-8")
        if len(encoded) < self._max_bytes:
            return line
        keep = self._max_bytes - 64
        cut = encoded[:keep].decode("utf-8", "ignore")
        return f"{cut}... <{len(encoded) - keep} more bytes cut>"

    def _take(self) -> str:
        text = "\n".join(self._lines)
        self._lines = []
        self._size = 0
        return text
