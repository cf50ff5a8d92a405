"""The Matrix bridge's configuration, read from environment variables.

Every ``MATRIX_*`` variable the bridge reads (the names are a contract, docs/bridges/matrix.md),
their defaults, and what makes a value wrong. Every problem is collected, so one run of
``switchboard-matrix --check`` (or a failed start) names them all at once, each with the fix.

What it deliberately does not know: the network, or what the state directory holds
(:mod:`.state`).
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Final
from urllib.parse import urlsplit

__all__ = [
    "ENV_NAMES",
    "ConfigProblems",
    "InvitePolicy",
    "MatrixConfig",
    "load_config",
    "read_token_file",
]

ENV_NAMES: Final = (
    "MATRIX_HOMESERVER",
    "MATRIX_USER_ID",
    "MATRIX_ACCESS_TOKEN",
    "MATRIX_ACCESS_TOKEN_FILE",
    "MATRIX_PASSWORD",
    "MATRIX_STATE_DIR",
    "MATRIX_ACCEPT_INVITES",
    "MATRIX_JOIN_ON_OPEN",
    "MATRIX_SYNC_TIMEOUT_MS",
    "MATRIX_TIMELINE_LIMIT",
    "MATRIX_RETRY_MAX_SECONDS",
    "MATRIX_DEVICE_NAME",
    "MATRIX_LOG_LEVEL",
)
"""Every variable the bridge reads."""

_USER_ID: Final = re.compile(r"^@[^:\s]+:[^\s]+$")
_LOG_LEVELS: Final = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")
_TRUE: Final = ("1", "true", "yes", "on")
_FALSE: Final = ("0", "false", "no", "off")


class ConfigProblems(ValueError):
    """The environment does not configure a bridge; ``problems`` says each thing to fix."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__("; ".join(problems))
        self.problems = problems


@dataclass(frozen=True, slots=True)
class InvitePolicy:
    """Whose invitations the bridge accepts.

    Attributes:
        anyone: every inviter (``*``).
        users: these user ids.
        servers: users whose id ends in ``:<server>`` for one of these.
    """

    anyone: bool = False
    users: frozenset[str] = frozenset()
    servers: frozenset[str] = frozenset()

    def allows(self, inviter: str) -> bool:
        """Whether an invitation from ``inviter`` is accepted (by the configuration)."""
        if self.anyone or inviter in self.users:
            return True
        _, _, server = inviter.partition(":")
        return bool(server) and server in self.servers

    def describe(self) -> str:
        """The policy in words, for the log."""
        if self.anyone:
            return "anyone"
        named = sorted(self.users) + sorted(self.servers)
        return ", ".join(named) if named else "nobody"


@dataclass(frozen=True, slots=True)
class MatrixConfig:
    """A complete, checked bridge configuration (see :class:`load_config`)."""

    homeserver: str
    user_id: str
    access_token: str | None
    access_token_file: Path | None
    password: str | None
    state_dir: Path
    accept_invites: InvitePolicy
    join_on_open: bool
    sync_timeout_ms: int
    timeline_limit: int
    retry_max_seconds: float
    device_name: str
    log_level: str

    @property
    def server_name(self) -> str:
        """The server part of the bridge's user id."""
        return self.user_id.partition(":")[2]


def _default_state_dir(env: Mapping[str, str], user_id: str) -> Path:
    base = env.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    safe = re.sub(r"[^A-Za-z0-9._@:-]", "_", user_id) or "unknown"
    return Path(base) / "switchboard-matrix" / safe


def _invites(value: str | None, server: str, problems: list[str]) -> InvitePolicy:
    if value is None:
        return InvitePolicy(servers=frozenset({server}) if server else frozenset())
    text = value.strip()
    if text.lower() == "none" or not text:
        return InvitePolicy()
    if text == "*":
        return InvitePolicy(anyone=True)
    users: set[str] = set()
    servers: set[str] = set()
    for entry in (part.strip() for part in text.split(",")):
        if not entry:
            continue
        if entry.startswith("@"):
            if _USER_ID.match(entry) is None:
                problems.append(
                    f"MATRIX_ACCEPT_INVITES: {entry!r} is not a user id; write @name:server"
                )
            users.add(entry)
        elif re.fullmatch(r"[A-Za-z0-9.:\[\]-]+", entry):
            servers.add(entry)
        else:
            problems.append(
                f"MATRIX_ACCEPT_INVITES: {entry!r} is neither a user id (@name:server) nor a "
                "server name; write none, *, or a comma list of those"
            )
    return InvitePolicy(users=frozenset(users), servers=frozenset(servers))


def _integer(env: Mapping[str, str], name: str, default: int, low: int, problems: list[str]) -> int:
    raw = env.get(name)
    if raw is None or not raw.strip():
        return default
    try:
        value = int(raw.strip())
    except ValueError:
        problems.append(f"{name}: {raw!r} is not a whole number")
        return default
    if value < low:
        problems.append(f"{name}: {value} is below {low}")
        return default
    return value


def _seconds(env: Mapping[str, str], name: str, default: float, problems: list[str]) -> float:
    raw = env.get(name)
    if raw is None or not raw.strip():
        return default
    try:
        value = float(raw.strip())
    except ValueError:
        problems.append(f"{name}: {raw!r} is not a number of seconds")
        return default
    if not value > 0:
        problems.append(f"{name}: {raw!r} must be more than 0")
        return default
    return value


def _flag(env: Mapping[str, str], name: str, default: bool, problems: list[str]) -> bool:
    raw = env.get(name)
    if raw is None or not raw.strip():
        return default
    word = raw.strip().lower()
    if word in _TRUE:
        return True
    if word in _FALSE:
        return False
    problems.append(f"{name}: {raw!r} is not true or false")
    return default


def load_config(env: Mapping[str, str] | None = None) -> MatrixConfig:
    """Read and check the configuration from ``env`` (default: the process environment).

    What it knows: every ``MATRIX_*`` variable the bridge reads (the names are a contract,
    docs/bridges/matrix.md), their defaults, and what makes a value wrong. Every problem is
    collected, so one run of ``switchboard-matrix --check`` (or a failed start) names them all at
    once, each with the fix.

    - ``MATRIX_HOMESERVER`` (an ``http://`` or ``https://`` URL) and ``MATRIX_USER_ID``
      (``@name:server``) are required;
    - exactly one credential: ``MATRIX_ACCESS_TOKEN``, ``MATRIX_ACCESS_TOKEN_FILE`` (a file only its
      owner may read: mode 600 or stricter), or ``MATRIX_PASSWORD`` (log in once; the token is kept
      in the state directory). Two of them at once is refused rather than guessed;
    - ``MATRIX_STATE_DIR``: where the sync token (and a token from a password login) live; default
      ``$XDG_STATE_HOME/switchboard-matrix/<user id>`` (``~/.local/state`` without it);
    - ``MATRIX_ACCEPT_INVITES``: whose invitations are accepted: ``none``, ``*``, or a comma list of
      user ids (``@ann:example.org``) and server names (``example.org``); default: users of the
      bridge's own server;
    - ``MATRIX_JOIN_ON_OPEN`` (``true``): whether ``channels/open`` may join a room by id or alias;
    - ``MATRIX_SYNC_TIMEOUT_MS`` (30000), ``MATRIX_TIMELINE_LIMIT`` (50, events per room per sync; a
      larger gap is filled by paging back), ``MATRIX_RETRY_MAX_SECONDS`` (30, the longest pause
      between reconnection attempts), ``MATRIX_DEVICE_NAME`` (``Switchboard``, for a password
      login), ``MATRIX_LOG_LEVEL`` (``INFO``).

    Raises:
        ConfigProblems: with every problem found, each naming its variable and the fix.
    """
    env = os.environ if env is None else env
    problems: list[str] = []

    def text(name: str) -> str | None:
        value = env.get(name)
        return value if value is not None and value.strip() else None

    homeserver = (text("MATRIX_HOMESERVER") or "").strip()
    if not homeserver:
        problems.append("MATRIX_HOMESERVER is not set; set it to the homeserver's URL")
    else:
        parts = urlsplit(homeserver)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            problems.append(f"MATRIX_HOMESERVER: {homeserver!r} is not an http:// or https:// URL")
    user_id = (text("MATRIX_USER_ID") or "").strip()
    if not user_id:
        problems.append("MATRIX_USER_ID is not set; set it to the bot's id, @name:server")
    elif _USER_ID.match(user_id) is None:
        problems.append(f"MATRIX_USER_ID: {user_id!r} is not a user id; write @name:server")

    token = text("MATRIX_ACCESS_TOKEN")
    token_file_text = text("MATRIX_ACCESS_TOKEN_FILE")
    password = env.get("MATRIX_PASSWORD") or None
    given = [
        name
        for name, value in (
            ("MATRIX_ACCESS_TOKEN", token),
            ("MATRIX_ACCESS_TOKEN_FILE", token_file_text),
            ("MATRIX_PASSWORD", password),
        )
        if value is not None
    ]
    if not given:
        problems.append(
            "no credential: set MATRIX_ACCESS_TOKEN, MATRIX_ACCESS_TOKEN_FILE (mode 600) or "
            "MATRIX_PASSWORD"
        )
    elif len(given) > 1:
        problems.append(
            f"{' and '.join(given)} are both set; set exactly one credential so it is clear "
            "which one is used"
        )
    token_file = Path(token_file_text).expanduser() if token_file_text else None

    state_text = text("MATRIX_STATE_DIR")
    state_dir = Path(state_text).expanduser() if state_text else _default_state_dir(env, user_id)
    server = user_id.partition(":")[2]
    invites = _invites(env.get("MATRIX_ACCEPT_INVITES"), server, problems)
    join_on_open = _flag(env, "MATRIX_JOIN_ON_OPEN", True, problems)
    sync_timeout = _integer(env, "MATRIX_SYNC_TIMEOUT_MS", 30_000, 0, problems)
    timeline_limit = _integer(env, "MATRIX_TIMELINE_LIMIT", 50, 1, problems)
    retry_max = _seconds(env, "MATRIX_RETRY_MAX_SECONDS", 30.0, problems)
    device_name = text("MATRIX_DEVICE_NAME") or "Switchboard"
    level = (text("MATRIX_LOG_LEVEL") or "INFO").strip().upper()
    if level not in _LOG_LEVELS:
        problems.append(f"MATRIX_LOG_LEVEL: {level!r} is not one of {', '.join(_LOG_LEVELS)}")
        level = "INFO"
    if problems:
        raise ConfigProblems(problems)
    return MatrixConfig(
        homeserver=homeserver.rstrip("/"),
        user_id=user_id,
        access_token=token.strip() if token else None,
        access_token_file=token_file,
        password=password,
        state_dir=state_dir,
        accept_invites=invites,
        join_on_open=join_on_open,
        sync_timeout_ms=sync_timeout,
        timeline_limit=timeline_limit,
        retry_max_seconds=retry_max,
        device_name=device_name,
        log_level=level,
    )


def read_token_file(path: Path) -> str:
    """The access token in ``path``, which only its owner may read or write.

    Raises:
        ConfigProblems: the file is missing, unreadable, empty, or open to others.
    """
    try:
        info = path.stat()
    except OSError as exc:
        raise ConfigProblems(
            [f"MATRIX_ACCESS_TOKEN_FILE {path} cannot be read: {exc.strerror or exc}"]
        ) from exc
    if info.st_mode & (stat.S_IRWXG | stat.S_IRWXO):
        mode = stat.S_IMODE(info.st_mode)
        raise ConfigProblems(
            [
                f"MATRIX_ACCESS_TOKEN_FILE {path} has mode {mode:o}: others may read the "
                f"token; run chmod 600 {path}"
            ]
        )
    try:
        token = path.read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigProblems([f"MATRIX_ACCESS_TOKEN_FILE {path} cannot be read: {exc}"]) from exc
    if not token:
        raise ConfigProblems([f"MATRIX_ACCESS_TOKEN_FILE {path} is empty"])
    return token
