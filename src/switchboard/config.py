"""Switchboard's TOML configuration, validated with pydantic.

A config file names the connectors (a command to spawn over stdio, or a ``tcp://`` /
``ws://`` URL to dial), the host's grant policy for each, the store, and how the agent
reaches Switchboard. Everything has a default, so :func:`demo_config` can build the embedded
default without a file. See docs/configuration.md for every key.

It also knows which capability leaves Switchboard can serve: a ``grant`` entry that can only
ever match a leaf Switchboard answers with ``-32601`` (or never sends) is refused when the file
is loaded (:data:`UNSERVED_LEAVES`). It does not know what a connector advertises; the session
intersects the grant with that at the handshake.

:func:`load_config` expands ``${NAME}`` and ``${NAME:-default}`` in every string value from the
environment and then the file's ``env_file`` (``$${`` is a literal ``${``), refuses an unset
variable by name, makes relative paths absolute against the config file's folder, and turns
pydantic's errors into one line per problem with the fix (the nearest key, the TOML form of a
list of tables, the list a string ``command`` should be). Values are checked without I/O: port
range, URL schemes, log level, grant entries that match no capability path, home syntax;
what needs the machine (programs, folders) is :mod:`switchboard.configcheck`.

The ``[agent]`` model holds the rules of the HTTP endpoint that need no I/O: a bind address
other than loopback needs a token, a wildcard bind needs ``allowed_hosts``, a token has a usable
shape. Reading a ``token_file``, binding and checking requests belong to
:mod:`switchboard.agent_http`.
"""

from __future__ import annotations

import difflib
import io
import ipaddress
import json
import os
import re
import shlex
import sys
import tomllib
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlsplit

from dotenv.parser import parse_stream
from pydantic import (
    BaseModel,
    ByteSize,
    ConfigDict,
    Field,
    SecretStr,
    ValidationError,
    field_validator,
    model_validator,
)

from switchboard.protocol import CAPABILITY_PATHS, Grant, path_matches

__all__ = [
    "DEFAULT_GRANT",
    "DIAL_SCHEMES",
    "HANDLE_PATTERN",
    "LOG_LEVELS",
    "MIN_TOKEN_LENGTH",
    "UNSERVED_LEAVES",
    "AgentConfig",
    "AgentEntry",
    "AgentRole",
    "Config",
    "ConfigError",
    "ConnectorConfig",
    "StatusConfig",
    "StoreConfig",
    "SubscriptionAllow",
    "demo_config",
    "demo_connector_command",
    "expand_env",
    "grant_entry_problem",
    "home_problem",
    "is_loopback",
    "is_wildcard",
    "load_config",
    "parse_duration",
    "read_env_file",
    "token_problem",
    "unserved_only",
]

#: The grant Switchboard offers a connector when its config says nothing: every channel leaf,
#: push events and the connector's MCP tools. It is intersected with what the connector
#: advertises (MCPL §5.4). ``tools`` is in it because real chat connectors list it in the
#: ``uses`` of every feature set (docs/configuration.md has the table); without it they
#: disable all their sets and drop every message.
DEFAULT_GRANT: tuple[str, ...] = (
    "channels.register",
    "channels.lifecycle",
    "channels.publish",
    "channels.incoming",
    "channels.streaming",
    "channels.acknowledge",
    "channels.typing",
    "pushEvents",
    "tools",
)

#: Capability leaves Switchboard cannot serve, and why. Granting one would enable a
#: connector's feature set that then never works, so no grant ever includes them: an entry
#: that matches nothing else is refused at load, and a wildcard that also matches them (``*``)
#: is applied without them.
UNSERVED_LEAVES: dict[str, str] = {
    "inferenceRequest": "Switchboard runs no inference for connectors: it answers "
    "inference/request with -32601",
    "inferenceRequest.streaming": "Switchboard runs no inference for connectors: it answers "
    "inference/request with -32601",
    "modelInfo": "Switchboard does not know the agent's model: it answers model/info with -32601",
    "inferenceLifecycle": "Switchboard does not see the agent's inference: it sends no "
    "inference/lifecycle notifications",
}


def unserved_only(pattern: str) -> tuple[str, ...]:
    """The unserved leaves ``pattern`` matches, when it matches no servable leaf at all.

    Returns:
        The matched leaves (sorted) if every capability path the pattern matches is one
        Switchboard cannot serve; ``()`` when it matches a servable leaf or nothing.
    """
    matcher = Grant([pattern])
    matched = {path for path in CAPABILITY_PATHS if matcher.allows(path)}
    if matched and matched <= UNSERVED_LEAVES.keys():
        return tuple(sorted(matched))
    return ()


def _grant_candidates() -> tuple[str, ...]:
    wild = {path.rsplit(".", 1)[0] + ".*" for path in CAPABILITY_PATHS if "." in path}
    return tuple(sorted({*CAPABILITY_PATHS, *wild, "*"}))


_GRANT_CANDIDATES = _grant_candidates()


def grant_entry_problem(entry: str) -> str | None:
    """Why grant entry ``entry`` can never grant anything, or ``None`` when it matches a path.

    An entry must match at least one capability path of MCPL 0.5 (segment by segment, ``*``
    standing for one segment); a typo such as ``channel.*`` matches none, and the problem names
    the nearest pattern that does.
    """
    if any(path_matches(entry, path) for path in CAPABILITY_PATHS):
        return None
    near = difflib.get_close_matches(entry, _GRANT_CANDIDATES, n=1, cutoff=0.6)
    hint = f"did you mean {near[0]!r}? " if near else ""
    return (
        f"grant entry {entry!r} matches no capability path, so it grants nothing; {hint}"
        "a path is one of channels.*, pushEvents, tools, contextHooks.*.* (docs/configuration.md, "
        '"The grant"), and `*` stands for exactly one segment'
    )


def home_problem(home: str) -> str | None:
    """What makes ``home`` unusable as a channel name, or ``None`` when its syntax is fine.

    A home is a name as ``channel_list`` shows it: an id, ``serverId:channelId``, a ``#label``
    or an ``@person``. Whether it names a channel can only be told once connectors register.
    """
    if home != home.strip():
        return f"home {home!r} starts or ends with a space; write it without"
    if any(ord(ch) < 32 or ord(ch) == 127 for ch in home):
        return f"home {home!r} holds a line break or a control character"
    if home.startswith(">"):
        return (
            f"home {home!r} starts with '>', which is prose-routing syntax; write the channel's "
            'name alone, for example home = "discord:general"'
        )
    if home in ("#", "@") or home.startswith(":") or home.endswith(":"):
        return (
            f"home {home!r} is not a channel name: write an id, serverId:channelId, #label or "
            '@person as channel_list shows it, for example home = "discord:general"'
        )
    return None


#: The URL schemes a connector's ``url`` may use.
DIAL_SCHEMES: tuple[str, ...] = ("tcp", "ws", "wss")

#: The log levels ``log_level`` accepts (in any case).
LOG_LEVELS: tuple[str, ...] = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")


def _url_problem(url: str) -> str | None:
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as exc:
        return f"url {url!r} is not a URL Switchboard can dial ({exc})"
    if parts.scheme not in DIAL_SCHEMES:
        hint = (
            "; a connector served over the web is reached by its WebSocket: ws://... or wss://..."
            if parts.scheme in ("http", "https")
            else ""
        )
        scheme = f"the scheme {parts.scheme!r}" if parts.scheme else "no scheme"
        return (
            f"url {url!r} has {scheme}, but Switchboard dials tcp://host:port, "
            f"ws://host[:port]/path or wss://host[:port]/path{hint}"
        )
    if not parts.hostname:
        return f"url {url!r} names no host: write {parts.scheme}://host:port..."
    if parts.scheme == "tcp" and port is None:
        return f"url {url!r} names no port: write tcp://{parts.hostname}:PORT"
    return None


class ConfigError(Exception):
    """The configuration cannot be used; the message says which key and why.

    ``problems`` holds one line per problem (a message may join several); ``str()`` is the
    whole message.
    """

    def __init__(self, message: str, problems: Sequence[str] = ()) -> None:
        super().__init__(message)
        self.problems: tuple[str, ...] = tuple(problems) or (message,)


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class SubscriptionAllow(_Strict):
    """A subscription allow-list: these channels are opened whenever they are discovered."""

    allow: list[str] = Field(
        default_factory=list, description="channel ids or raw address ids (address.channelId)"
    )


class ConnectorConfig(_Strict):
    """One MCPL connector: how to reach it and what it may do."""

    id: str = Field(min_length=1, description="The server id; channels are keyed by it.")
    command: list[str] | None = Field(default=None, description="argv to spawn over stdio")
    url: str | None = Field(default=None, description="tcp://host:port or ws(s)://... to dial")
    # Often a connector's platform secrets: never shown in a repr (a log line, a traceback).
    env: dict[str, str] = Field(default_factory=dict, repr=False)
    cwd: str | None = None
    grant: list[str] = Field(default_factory=lambda: list(DEFAULT_GRANT))
    channels: list[str] | None = Field(
        default=None,
        description="glob patterns of channel ids this connector may register (None: any)",
    )
    enabled_feature_sets: list[str] | None = None
    request_timeout: float = Field(default=30.0, gt=0)
    publish_timeout: float = Field(default=30.0, gt=0)
    restart: bool = True
    backoff_initial: float = Field(default=0.5, gt=0)
    backoff_max: float = Field(default=30.0, gt=0)
    max_frame_bytes: int = Field(default=16 * 1024 * 1024, ge=1024)
    max_channels: int = Field(
        default=10_000,
        ge=1,
        description="most channels this connector may have registered at once; descriptors "
        "past it are refused one by one with the reason (docs/operations.md, Limits)",
    )
    max_registrations_per_second: float | None = Field(
        default=1_000.0,
        gt=0,
        description="new channels this connector may register per second after its first "
        "max_channels (a token bucket); descriptors past it are refused with a retry time; "
        "None: no rate",
    )
    max_messages_per_second: float | None = Field(
        default=None,
        gt=0,
        description="incoming messages this connector may send per second (a token bucket "
        "with one second of burst); a channels/incoming batch past it is refused whole and "
        "unacknowledged, -32603 with data.reason rate-limited and retryAfterMs; None: no rate",
    )
    subscription: Literal["initially-open", "auto"] | SubscriptionAllow = Field(
        default="initially-open",
        description="which channels open when discovered: those the connector marks "
        "initiallyOpen, all (auto), or also an allow-list (docs/lifecycle.md)",
    )
    compat: Literal["auto", "strict", "lenient"] = Field(
        default="auto",
        description="pre-0.5 compatibility (docs/compatibility.md): auto judges a connector "
        "that speaks 0.4 by 0.4 rules, strict never does, lenient always does",
    )
    manifest_fetch_interval: float = Field(
        default=1.0,
        ge=0,
        description="least seconds between two mcpl/manifest fetches on one connection (§17.8)",
    )

    @model_validator(mode="after")
    def _id_not_reserved(self) -> ConnectorConfig:
        if self.id.startswith("@"):
            raise ValueError(
                f"connector id {self.id!r} starts with '@', which Switchboard keeps for mail "
                "between agents (docs/agents.md); pick an id without it"
            )
        return self

    @model_validator(mode="after")
    def _one_way_in(self) -> ConnectorConfig:
        if (self.command is None) == (self.url is None):
            raise ValueError("give exactly one of `command` or `url`")
        if self.command is not None and not self.command:
            raise ValueError("`command` must not be empty")
        if self.command is not None and not self.command[0]:
            raise ValueError("`command` starts with an empty program name")
        if self.url is not None:
            problem = _url_problem(self.url)
            if problem:
                raise ValueError(f"connector {self.id!r}: {problem}")
        return self

    @model_validator(mode="after")
    def _grant_servable(self) -> ConnectorConfig:
        typos = [p for p in map(grant_entry_problem, self.grant) if p]
        if typos:
            raise ValueError(f"connector {self.id!r}: " + "; ".join(typos))
        for entry in self.grant:
            leaves = unserved_only(entry)
            if leaves:
                why = "; ".join(f"{leaf}: {UNSERVED_LEAVES[leaf]}" for leaf in leaves)
                raise ValueError(
                    f"grant entry {entry!r} of connector {self.id!r} can only grant what "
                    f"Switchboard cannot serve ({why}); remove it from `grant`"
                )
        return self


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


class StoreConfig(_Strict):
    path: str = "switchboard.sqlite"
    synchronous: Literal["normal", "full"] = "normal"
    snapshot_every: int = Field(
        default=10_000, ge=1, description="decision events between two decision-log snapshots"
    )
    # Retention (docs/operations.md, "Retention"): durations are seconds once loaded.
    retain: float | None = Field(
        default=None, description='keep messages at least this long ("30d"); unset keeps all'
    )
    max_size: ByteSize | None = Field(
        default=None, description='cap on the pages in use ("2GB" decimal, "2GiB" binary)'
    )
    retention_interval: float = Field(default=60.0, description="seconds between two passes")

    @field_validator("retain", "retention_interval", mode="before")
    @classmethod
    def _duration(cls, value: object) -> object:
        return None if value is None else parse_duration(value)

    @field_validator("max_size")
    @classmethod
    def _positive_size(cls, value: ByteSize | None) -> ByteSize | None:
        if value is not None and value <= 0:
            raise ValueError('max_size must be more than 0 bytes, such as "2GB"')
        return value


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


class AgentConfig(_Strict):
    name: str = "agent"
    transport: Literal["stdio", "http", "none"] = "stdio"
    host: str = "127.0.0.1"
    port: int = Field(default=8765, description="0: any free port")
    token: SecretStr | None = Field(
        default=None,
        description="the bearer token the agent sends over HTTP; usually ${SOME_VARIABLE}",
    )
    token_file: str | None = Field(
        default=None,
        min_length=1,
        description="a file holding the bearer token, read at start (mode 600 or stricter)",
    )
    allowed_hosts: list[str] | None = Field(
        default=None,
        description="Host header values the HTTP endpoint accepts (host, host:port, host:*); "
        "None: derived from `host`",
    )
    allowed_origins: list[str] | None = Field(
        default=None,
        description="Origin header values it accepts (http://host:port, ...:*); None: http:// "
        "and https:// of each allowed host. A request without Origin is accepted",
    )
    home: str | None = Field(
        default=None,
        min_length=1,
        description="the channel plain speech goes to, named as channel_list names it; "
        "resolved at the start of each turn (None: the channel of the turn's messages)",
    )
    prose: Literal["locus", "explicit", "hybrid", "disabled"] = Field(
        default="hybrid",
        description="how the speak tool routes prose: hybrid (plain prose to the turn's locus, "
        ">>>target envelopes elsewhere), locus, explicit (>>target lines only) or disabled",
    )

    @field_validator("port")
    @classmethod
    def _port_in_range(cls, port: int) -> int:
        if not 0 <= port <= 65535:
            raise ValueError(
                f"{port} is not a TCP port: use 1 to 65535, or 0 for any free port "
                "(the start-up log says which)"
            )
        return port

    @field_validator("home")
    @classmethod
    def _home_syntax(cls, home: str | None) -> str | None:
        problem = None if home is None else home_problem(home)
        if problem:
            raise ValueError(problem)
        return home

    @model_validator(mode="after")
    def _safe_http(self) -> AgentConfig:
        if self.token is not None and self.token_file is not None:
            raise ValueError("give at most one of `token` or `token_file`")
        if self.token is not None:
            problem = token_problem(self.token.get_secret_value())
            if problem:
                raise ValueError(f"`token` is not a usable bearer token: {problem}")
        for entry in self.allowed_hosts or ():
            if not entry or "/" in entry or any(ch.isspace() for ch in entry):
                raise ValueError(
                    f"`allowed_hosts` entry {entry!r} is not a Host header value: write "
                    '"name", "name:port" or "name:*" (no scheme, no path)'
                )
        for entry in self.allowed_origins or ():
            if not re.fullmatch(r"https?://[^/\s]+", entry):
                raise ValueError(
                    f"`allowed_origins` entry {entry!r} is not an origin: write "
                    '"http://name:port", "https://name" or "http://name:*" (no path)'
                )
        if self.transport != "http":
            return self
        return self


class StatusConfig(_Strict):
    """``[status]``: the operator's status surface (docs/operations.md, "Status, health and
    metrics"). It is always served on the agents' HTTP listener when there is one; ``port``
    gives it a listener of its own (for a stdio agent, say)."""

    host: str = Field(default="127.0.0.1", description="where the own status listener binds")
    port: int | None = Field(
        default=None,
        ge=0,
        le=65535,
        description="the own status listener's port (0: any free port); None: no own listener",
    )
    token: SecretStr | None = Field(
        default=None,
        description="the operator's bearer token for /status, /metrics and the page; "
        "usually ${SOME_VARIABLE}",
    )
    token_file: str | None = Field(
        default=None, min_length=1, description="a file holding the operator's bearer token"
    )

    @model_validator(mode="after")
    def _safe_status(self) -> StatusConfig:
        if self.token is not None and self.token_file is not None:
            raise ValueError("[status]: give at most one of `token` or `token_file`")
        if self.token is not None:
            problem = token_problem(self.token.get_secret_value())
            if problem:
                raise ValueError(f"[status] `token` is not a usable bearer token: {problem}")
        tokenless = self.token is None and self.token_file is None
        if self.port is not None and not is_loopback(self.host) and tokenless:
            raise ValueError(
                f"[status] `host` = {self.host!r} is not a loopback address, and the status "
                "listener would have no token: anyone who can reach it could read every "
                "connector's state and recent messages. Set "
                '`token = "${SWITCHBOARD_STATUS_TOKEN}"` (or `token_file`) in [status], or '
                "bind `host` to 127.0.0.1"
            )
        return self


#: An agent's handle: ``@`` and a lower-case word (the directory's agent address grammar).
HANDLE_PATTERN = re.compile(r"@[a-z][a-z0-9-]*")

#: The roles an agent may hold (docs/agents.md, "Routing").
AgentRole = Literal["default_delivery", "receives_untargeted"]

#: The ``[agent]`` keys that describe the one agent of the shorthand; beside ``[[agents]]`` they
#: belong in each agent's own table.
_SHORTHAND_KEYS = ("name", "token", "token_file", "home", "prose")


class AgentEntry(_Strict):
    """One agent identity of ``[[agents]]`` (docs/agents.md).

    ``[agent]`` without ``[[agents]]`` is the one-agent shorthand: :meth:`Config.roster` turns
    it into one entry that holds both roles.
    """

    handle: str = Field(description="the agent's address, @[a-z][a-z0-9-]* (e.g. @resident)")
    token: SecretStr | None = Field(
        default=None, description="the bearer token that proves this identity over HTTP"
    )
    token_file: str | None = Field(
        default=None, min_length=1, description="a file holding the bearer token"
    )
    home: str | None = Field(
        default=None,
        min_length=1,
        description="the agent's home channel, named as channel_list names it: its traffic "
        "goes to this agent, and plain speech goes there",
    )
    prose: Literal["locus", "explicit", "hybrid", "disabled"] = "hybrid"
    roles: list[AgentRole] = Field(
        default_factory=list,
        description="default_delivery (exactly one agent: untargeted traffic when nobody "
        "receives_untargeted) and receives_untargeted",
    )
    mentions: list[str] = Field(
        default_factory=list,
        description="platform mentions that address this agent, e.g. '<@1234567890>'",
    )
    tags: list[str] = Field(default_factory=list)
    description: str = ""
    idle_ttl: float | None = Field(
        default=None,
        gt=0,
        description="seconds without a session after which the agent ends (None: persistent)",
    )

    @property
    def name(self) -> str:
        """The agent's key: its handle without the ``@`` (its inbox cursor is kept under it)."""
        return self.handle[1:] if self.handle.startswith("@") else self.handle

    @model_validator(mode="after")
    def _valid(self) -> AgentEntry:
        if not HANDLE_PATTERN.fullmatch(self.handle) or len(self.handle) > 64:
            raise ValueError(
                f"agent handle {self.handle!r} must match @[a-z][a-z0-9-]* "
                "(lower case, at most 64 characters), e.g. '@resident'"
            )
        if self.token is not None and self.token_file is not None:
            raise ValueError(f"{self.handle}: give at most one of `token` or `token_file`")
        if self.token is not None:
            problem = token_problem(self.token.get_secret_value())
            if problem:
                raise ValueError(f"{self.handle}: `token` is not a usable bearer token: {problem}")
        if len(set(self.roles)) != len(self.roles):
            raise ValueError(f"{self.handle}: a role is listed twice in `roles`")
        problem = None if self.home is None else home_problem(self.home)
        if problem:
            raise ValueError(f"{self.handle}: {problem}")
        return self


class Config(_Strict):
    connectors: list[ConnectorConfig] = Field(default_factory=list)
    store: StoreConfig = Field(default_factory=StoreConfig)
    agent: AgentConfig = Field(default_factory=AgentConfig)
    agents: list[AgentEntry] = Field(
        default_factory=list,
        description="the agent identities; empty: [agent] is the one agent (docs/agents.md)",
    )
    log_level: str = Field(default="INFO", description="DEBUG, INFO, WARNING, ERROR, CRITICAL")
    status: StatusConfig = Field(
        default_factory=StatusConfig,
        description="the status surface: /healthz, /readyz, /status, /metrics, the live page",
    )
    env_file: str | None = Field(
        default=None,
        min_length=1,
        description="a dotenv file (KEY=VALUE lines) whose values ${NAME} may use; the real "
        "environment wins (read by load_config)",
    )
    log_format: Literal["console", "json"] = Field(
        "console",
        description="console: one key=value line per event; json: one JSON object per line",
    )

    @field_validator("log_level")
    @classmethod
    def _known_level(cls, level: str) -> str:
        if level.upper() in LOG_LEVELS:
            return level.upper()
        aliases = {"VERBOSE": "DEBUG", "TRACE": "DEBUG", "WARN": "WARNING", "FATAL": "CRITICAL"}
        near = difflib.get_close_matches(level.upper(), LOG_LEVELS, n=1, cutoff=0.7)
        guess = aliases.get(level.upper()) or (near[0] if near else None)
        hint = f"did you mean {guess!r}? " if guess else ""
        raise ValueError(
            f"{level!r} is not a log level; {hint}use one of {', '.join(LOG_LEVELS)} (any case)"
        )

    def roster(self) -> tuple[AgentEntry, ...]:
        """The configured agents: ``[[agents]]``, or the one agent ``[agent]`` describes."""
        if self.agents:
            return tuple(self.agents)
        a = self.agent
        return (
            AgentEntry.model_construct(
                handle=f"@{a.name}",
                token=a.token,
                token_file=a.token_file,
                home=a.home,
                prose=a.prose,
                roles=["default_delivery", "receives_untargeted"],
                mentions=[],
                tags=[],
                description="",
                idle_ttl=None,
            ),
        )

    @model_validator(mode="after")
    def _tokens_off_loopback(self) -> Config:
        a = self.agent
        if a.transport != "http" or is_loopback(a.host):
            return self
        for entry in self.roster():
            if entry.token is None and entry.token_file is None:
                where = "[agent]" if not self.agents else f"the [[agents]] table of {entry.handle}"
                raise ValueError(
                    f"`host` = {a.host!r} is not a loopback address, and the HTTP endpoint "
                    "would have no token: anyone who can reach it could read the agent's inbox "
                    'and speak as the agent. Set `token = "${SWITCHBOARD_AGENT_TOKEN}"` (or '
                    f"`token_file`) in {where}, or bind `host` to 127.0.0.1"
                )
        if is_wildcard(a.host) and not a.allowed_hosts:
            raise ValueError(
                f"`host` = {a.host!r} listens on every interface, so Switchboard cannot "
                "tell which Host header names are yours: set `allowed_hosts` in [agent] to the "
                'names clients use, for example ["switchboard.example:8765"]'
            )
        return self

    @model_validator(mode="after")
    def _one_roster(self) -> Config:
        if not self.agents:
            return self
        stray = [k for k in _SHORTHAND_KEYS if k in self.agent.model_fields_set]
        if stray:
            keys = ", ".join(f"`{k}`" for k in stray)
            raise ValueError(
                f"[agent] sets {keys}, which describe one agent; with [[agents]] each agent "
                "has its own: move them into its [[agents]] table ([agent] keeps the endpoint: "
                "transport, host, port, allowed_hosts, allowed_origins)"
            )
        handles: set[str] = set()
        tokens: set[str] = set()
        for entry in self.agents:
            if entry.handle in handles:
                raise ValueError(f"agent handle {entry.handle!r} appears twice in [[agents]]")
            handles.add(entry.handle)
            if entry.token is not None:
                secret = entry.token.get_secret_value()
                if secret in tokens:
                    raise ValueError(
                        f"{entry.handle} has the same token as another agent: each agent's "
                        "token must prove that agent alone"
                    )
                tokens.add(secret)
        defaults = [e.handle for e in self.agents if "default_delivery" in e.roles]
        if len(self.agents) > 1 and len(defaults) != 1:
            found = ", ".join(defaults) if defaults else "none"
            raise ValueError(
                "exactly one agent in [[agents]] must have the role default_delivery (it gets "
                f"untargeted traffic when no agent receives_untargeted); found {found}"
            )
        if self.agent.transport == "http" and len(self.agents) > 1:
            anonymous = [e.handle for e in self.agents if e.token is None and e.token_file is None]
            if anonymous:
                raise ValueError(
                    f"over HTTP each agent's token says who it is, and {', '.join(anonymous)} "
                    'has none: set `token = "${SOME_VARIABLE}"` (or `token_file`) in its '
                    "[[agents]] table"
                )
        return self

    @model_validator(mode="after")
    def _unique_ids(self) -> Config:
        seen: set[str] = set()
        for c in self.connectors:
            if c.id in seen:
                raise ValueError(f"connector id {c.id!r} appears twice")
            seen.add(c.id)
        return self


_REFERENCE = re.compile(r"\$\$\{|\$\{([A-Za-z_][A-Za-z0-9_]*)(:-[^}]*)?\}|\$\{")


def _expand_text(text: str, where: str, env: Mapping[str, str], problems: list[str]) -> str:
    def one(match: re.Match[str]) -> str:
        whole = match.group(0)
        if whole == "$${":
            return "${"
        name, default = match.group(1), match.group(2)
        if name is None:
            problems.append(
                f"{where}: `${{` does not start a reference like ${{NAME}} or "
                "${NAME:-default} (letters, digits, _); write $${ for a literal ${"
            )
            return whole
        if default is not None:
            return env.get(name) or default[2:]
        if name not in env:
            problems.append(
                f"{where}: the environment variable {name} is not set (used as ${{{name}}}); "
                f"set it in the environment that runs switchboard (or in `env_file`), write "
                f"${{{name}:-default}} for a default, or $${{{name}}} for the literal text"
            )
            return whole
        return env[name]

    return _REFERENCE.sub(one, text)


def _expand_value(value: object, where: str, env: Mapping[str, str], problems: list[str]) -> object:
    if isinstance(value, str):
        return _expand_text(value, where, env, problems)
    if isinstance(value, list):
        return [_expand_value(v, f"{where}.{i}", env, problems) for i, v in enumerate(value)]
    if isinstance(value, dict):
        return {
            k: _expand_value(v, f"{where}.{k}" if where else str(k), env, problems)
            for k, v in value.items()
        }
    return value


def expand_env(data: dict[str, object], env: Mapping[str, str]) -> dict[str, object]:
    """``data`` (a parsed TOML document) with ``${NAME}`` in every string value replaced.

    ``${NAME}`` is the value of the environment variable ``NAME``; ``${NAME:-default}`` is its
    value when it is set and not empty, else ``default`` (the text up to the first ``}``, taken
    literally); ``$${`` is a literal ``${``; any other ``$`` is kept as it is. Keys are never
    expanded, and a value is expanded once (a variable's value is not searched for references).

    Raises:
        ConfigError: naming every key that refers to an unset variable (without a default) or
            holds a ``${`` that is not a reference.
    """
    problems: list[str] = []
    expanded = _expand_value(data, "", env, problems)
    if problems:
        raise ConfigError("; ".join(problems), problems)
    assert isinstance(expanded, dict)
    return expanded


def read_env_file(path: Path) -> dict[str, str]:
    """The ``KEY=VALUE`` lines of the dotenv file at ``path``.

    Blank lines and ``#`` comments are skipped, a value may be quoted ('...' or "..."), and an
    ``export`` in front of a key is allowed. Values are taken as written (no ``${...}`` in them
    is expanded); a key without ``=`` is skipped.

    Raises:
        ConfigError: the file cannot be read, or a line is not ``KEY=VALUE`` (naming the line).
    """
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError as exc:
        raise ConfigError(f"env_file {path} does not exist") from exc
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"env_file {path} cannot be read: {exc}") from exc
    values: dict[str, str] = {}
    bad: list[str] = []
    for binding in parse_stream(io.StringIO(text)):
        if binding.error:
            # The line itself is not shown: it may hold a secret.
            bad.append(
                f"env_file {path}, line {binding.original.line}: not a KEY=VALUE line (a key "
                "is letters, digits and _; quote a value that holds spaces or #)"
            )
        elif binding.key is not None and binding.value is not None:
            values[binding.key] = binding.value
    if bad:
        raise ConfigError("; ".join(bad), bad)
    return values


def _absolute(value: str, base: Path) -> str:
    path = Path(value).expanduser()
    return str(path if path.is_absolute() else base / path)


def _resolve_paths(data: dict[str, Any], base: Path) -> None:
    """Make the relative paths of ``data`` absolute against ``base`` (the config's folder)."""
    store = data.get("store")
    if isinstance(store, dict):
        where = store.get("path")
        if isinstance(where, str) and where not in ("", ":memory:") and ":" not in where[:6]:
            store["path"] = _absolute(where, base)
    tables: list[object] = [data.get("agent")]
    agents = data.get("agents")
    if isinstance(agents, list):
        tables += agents
    for table in tables:
        if isinstance(table, dict) and isinstance(table.get("token_file"), str):
            table["token_file"] = _absolute(table["token_file"], base)
    connectors = data.get("connectors")
    for connector in connectors if isinstance(connectors, list) else ():
        if not isinstance(connector, dict):
            continue
        cwd = connector.get("cwd")
        if isinstance(cwd, str) and cwd:
            connector["cwd"] = cwd = _absolute(cwd, base)
        command = connector.get("command")
        if isinstance(command, list) and command and isinstance(command[0], str):
            program = command[0]
            if "/" in program:
                home = Path(cwd) if isinstance(cwd, str) and cwd else base
                connector["command"] = [_absolute(program, home), *command[1:]]


# The tables of the file by the key that holds them, for telling a table from a list of them.
_LISTS_OF_TABLES = ("connectors", "agents")


def _model_at(loc: Sequence[int | str]) -> type[BaseModel] | None:
    """The model whose keys the table at ``loc`` (a pydantic error location) holds."""
    model: type[BaseModel] | None = Config
    for part in loc:
        if model is None:
            return None
        if isinstance(part, int):
            continue
        field = model.model_fields.get(part)
        if field is None:
            return None
        model = _model_in(field.annotation)
    return model


def _model_in(annotation: object) -> type[BaseModel] | None:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for arg in getattr(annotation, "__args__", ()):
        found = _model_in(arg)
        if found is not None:
            return found
    return None


def _table_name(loc: Sequence[int | str]) -> str:
    if not loc:
        return "the top level"
    if loc[0] in _LISTS_OF_TABLES and len(loc) >= 2 and isinstance(loc[1], int):
        inner = ".".join(str(x) for x in loc[2:])
        return f"[[{loc[0]}]]" + (f" (at {inner})" if inner else "")
    return "[" + ".".join(str(x) for x in loc) + "]"


def _unknown_key(loc: tuple[int | str, ...]) -> str:
    key, parent = str(loc[-1]), loc[:-1]
    model = _model_at(parent)
    if model is None:
        return f"`{key}` is not a key here"
    keys = list(model.model_fields)
    where = _table_name(parent)
    near = difflib.get_close_matches(key, keys, n=1, cutoff=0.6)
    if near:
        return f"`{key}` is not a key of {where}; did you mean `{near[0]}`?"
    if parent and key in Config.model_fields:
        return (
            f"`{key}` is a top-level key, but it sits in {where}: in TOML a key belongs to the "
            "table heading above it, so move it above the first [table] heading"
        )
    if not parent:
        for name, field in Config.model_fields.items():
            inner = _model_in(field.annotation)
            if inner is not None and key in inner.model_fields:
                form = f"[[{name}]]" if name in _LISTS_OF_TABLES else f"[{name}]"
                return f"`{key}` is not a top-level key: it belongs in {form}; move it under it"
    return f"`{key}` is not a key of {where}; its keys are {', '.join(keys)}"


def _secret_place(loc: Sequence[int | str]) -> bool:
    return any(str(part) in ("env", "token") for part in loc)


def _toml_array(items: list[str]) -> str:
    return "[" + ", ".join(json.dumps(item) for item in items) + "]"


def _problem(error: Mapping[str, Any]) -> str:
    """One line for one pydantic error: where, what, and the fix when one is known."""
    loc: tuple[int | str, ...] = tuple(error["loc"])
    kind: str = error["type"]
    given: object = error.get("input")
    where = ".".join(str(x) for x in loc) or "(top)"
    message: str = error["msg"]
    if kind == "extra_forbidden":
        return f"{where}: {_unknown_key(loc)}"
    if kind == "missing":
        return f"{where}: `{loc[-1]}` is required in {_table_name(loc[:-1])}"
    if kind == "list_type" and isinstance(given, dict) and loc and loc[-1] in _LISTS_OF_TABLES:
        name = loc[-1]
        return (
            f"{where}: `[{name}]` makes one table, but {name} is a list of tables: write "
            f"`[[{name}]]` (two brackets) above each one"
        )
    if kind in ("model_type", "dict_type") and isinstance(given, list) and loc:
        return (
            f"{where}: `[[{loc[-1]}]]` makes a list of tables, but {loc[-1]} is one table: "
            f"write `[{loc[-1]}]` (one bracket)"
            + ("; for several agents use [[agents]]" if loc[-1] == "agent" else "")
        )
    if kind == "list_type" and isinstance(given, str) and not _secret_place(loc):
        try:
            words = shlex.split(given) if loc[-1] == "command" else [given]
        except ValueError:
            words = given.split()
        return (
            f"{where}: `{loc[-1]}` is a list of strings, not one string: write "
            f"{loc[-1]} = {_toml_array(words or [given])}"
        )
    if message.startswith("Value error, "):
        return f"{where}: {message.removeprefix('Value error, ')}"
    shown = "" if _secret_place(loc) or isinstance(given, dict | list) else f" (got {given!r})"
    return f"{where}: {message}{shown}"


def _problems(exc: ValidationError) -> list[str]:
    lines: list[str] = []
    for error in exc.errors():
        line = _problem(error)
        if line not in lines:
            lines.append(line)
    return lines


def _invalid(p: Path, problems: list[str]) -> ConfigError:
    if len(problems) == 1:
        return ConfigError(f"config file {p} is invalid: {problems[0]}", problems)
    listed = "\n".join(f"  - {line}" for line in problems)
    return ConfigError(
        f"config file {p} is invalid ({len(problems)} problems):\n{listed}", problems
    )


def load_config(path: str | Path, *, env: Mapping[str, str] | None = None) -> Config:
    """Read, expand and validate a TOML config file, raising :class:`ConfigError` with a clear
    reason for every problem (one line each, with the fix when one is known).

    ``${NAME}`` and ``${NAME:-default}`` take values from ``env`` (default: the process
    environment), then from the file's ``env_file`` (the environment wins). Relative paths
    (``store.path``, ``env_file``, ``token_file``, a connector's ``cwd``, and a ``command[0]``
    that holds a ``/``, the last against the connector's ``cwd`` when it has one) are made
    absolute against the config file's folder. Nothing else is checked on disk here; see
    :mod:`switchboard.configcheck`.
    """
    p = Path(path)
    base = Path(os.path.abspath(p)).parent
    try:
        data = tomllib.loads(p.read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise ConfigError(f"config file {p} does not exist") from exc
    except IsADirectoryError as exc:
        raise ConfigError(f"config file {p} is a folder, not a file") from exc
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"config file {p} cannot be read: {exc}") from exc
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"config file {p} is not valid TOML: {exc}") from exc
    real = os.environ if env is None else env
    try:
        named = data.get("env_file")
        if isinstance(named, str) and named:
            named = expand_env({"env_file": named}, real)["env_file"]
            assert isinstance(named, str)
            data["env_file"] = named = _absolute(named, base)
            real = {**read_env_file(Path(named)), **real}
        data = expand_env(data, real)
    except ConfigError as exc:
        raise ConfigError(
            f"config file {p}: {exc}", [f"config file {p}: {line}" for line in exc.problems]
        ) from exc
    _resolve_paths(data, base)
    try:
        return Config.model_validate(data)
    except ValidationError as exc:
        raise _invalid(p, _problems(exc)) from exc


def demo_connector_command(*extra: str) -> list[str]:
    """The argv that spawns the bundled demo connector with this interpreter."""
    return [sys.executable, "-m", "switchboard.connectors.demo", *extra]


def demo_config(store_path: str, *, interval: float = 1.5, count: int | None = None) -> Config:
    """The embedded default: one demo connector, a store at ``store_path``."""
    args = ["--hello", "--interval", str(interval)]
    if count is not None:
        args += ["--count", str(count)]
    return Config(
        connectors=[ConnectorConfig(id="demo", command=demo_connector_command(*args))],
        store=StoreConfig(path=store_path),
        agent=AgentConfig(transport="none"),
    )
