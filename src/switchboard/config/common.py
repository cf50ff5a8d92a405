"""What every section of the config shares: :class:`ConfigError`, the strict model base,
durations, token and host checks."""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Sequence

from pydantic import (
    BaseModel,
    ConfigDict,
)

__all__ = [
    "LOG_LEVELS",
    "MIN_TOKEN_LENGTH",
    "ConfigError",
    "Strict",
    "is_loopback",
    "is_wildcard",
    "parse_duration",
    "token_problem",
]


#: The log levels ``log_level`` accepts (in any case).
LOG_LEVELS: tuple[str, ...] = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")


class ConfigError(Exception):
    """The configuration cannot be used; the message says which key and why.

    ``problems`` holds one line per problem (a message may join several); ``str()`` is the
    whole message.
    """

    def __init__(self, message: str, problems: Sequence[str] = ()) -> None:
        super().__init__(message)
        self.problems: tuple[str, ...] = tuple(problems) or (message,)


class Strict(BaseModel):
    """The base of every config table: unknown keys are refused, and no value is converted
    (``strict``): ``port = "8766"`` or ``restart = "yes"`` is a mistake to list, never a
    silent guess. A TOML integer is still a valid float. A field that must take a string for
    another type (an enum, a ``Path``) says so with ``Field(strict=False)``, or is a
    ``Literal`` of strings, or is read by a ``mode="before"`` validator (the durations)."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)


_DURATION_PART = re.compile(r"\s*(\d+(?:\.\d+)?)\s*([smhd])", re.IGNORECASE)
_DURATION_UNITS = {"s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}


def parse_duration(value: object) -> float:
    """Seconds in a duration: ``"30d"``, ``"12h"``, ``"1h30m"``, ``"1.5h"``, ``"90s"`` (units
    s, m, h, d, case-insensitive; parts add up), or a plain number of seconds. It must be
    positive. (Hand-written: pydantic reads ISO 8601 ``P30D`` and clock times, not ``30d``.)

    Raises:
        ValueError: the value is not such a duration, or is not positive.
    """
    if isinstance(value, bool):
        raise ValueError(f'a duration such as "30d" or "12h" is needed, not {value!r}')
    if isinstance(value, int | float):
        seconds = float(value)
    elif isinstance(value, str) and value.strip():
        text, pos, seconds = value.strip(), 0, 0.0
        while pos < len(text):
            part = _DURATION_PART.match(text, pos)
            if part is None:
                raise ValueError(
                    f"{value!r} is not a duration: write a number and a unit (s, m, h or d), "
                    'such as "30d", "12h" or "1h30m"'
                )
            seconds += float(part.group(1)) * _DURATION_UNITS[part.group(2).lower()]
            pos = part.end()
    else:
        raise ValueError(f'a duration such as "30d" or "12h" is needed, not {value!r}')
    if not seconds > 0 or seconds == float("inf"):
        raise ValueError(f"a duration must be positive and finite, not {value!r}")
    return seconds


#: The least length of an agent's bearer token.
MIN_TOKEN_LENGTH = 16

_MAKE_A_TOKEN = "python3 -c 'import secrets; print(secrets.token_urlsafe(32))'"


def token_problem(token: str) -> str | None:
    """What makes ``token`` unusable as a bearer token, or ``None`` when it is usable.

    A token is sent in an HTTP header, so it is visible ASCII without spaces; it is at least
    :data:`MIN_TOKEN_LENGTH` characters, so it cannot be guessed.
    """
    if not token:
        return f"it is empty; make one with {_MAKE_A_TOKEN}"
    if any(not ("!" <= ch <= "~") for ch in token):
        return (
            "it holds a space, a control character or a non-ASCII character, which an HTTP "
            f"header cannot carry; make one with {_MAKE_A_TOKEN}"
        )
    if len(token) < MIN_TOKEN_LENGTH:
        return (
            f"it is {len(token)} characters, shorter than {MIN_TOKEN_LENGTH}; "
            f"make one with {_MAKE_A_TOKEN}"
        )
    return None


def _bare_host(host: str) -> str:
    return host[1:-1] if host.startswith("[") and host.endswith("]") else host


def is_wildcard(host: str) -> bool:
    """Whether binding ``host`` listens on every interface (``0.0.0.0``, ``::``, empty)."""
    bare = _bare_host(host)
    if not bare:
        return True
    try:
        return ipaddress.ip_address(bare).is_unspecified
    except ValueError:
        return False


def is_loopback(host: str) -> bool:
    """Whether ``host`` is a loopback address (``127.0.0.0/8``, ``::1``) or ``localhost``."""
    bare = _bare_host(host)
    if bare.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(bare).is_loopback
    except ValueError:
        return False
