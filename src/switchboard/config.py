"""Switchboard's TOML configuration, validated with pydantic.

A config file names the connectors (a command to spawn over stdio, or a ``tcp://`` /
``ws://`` URL to dial), the host's grant policy for each, the store, and how the agent
reaches Switchboard. Everything has a default, so :func:`demo_config` can build the embedded
default without a file. See docs/configuration.md for every key.

It also knows which capability leaves Switchboard can serve: a ``grant`` entry that can only
ever match a leaf Switchboard answers with ``-32601`` (or never sends) is refused when the file
is loaded (:data:`UNSERVED_LEAVES`). It does not know what a connector advertises; the session
intersects the grant with that at the handshake.

:func:`load_config` expands ``${NAME}`` in every string value from the environment (``$${``
is a literal ``${``), and refuses an unset variable by name. The ``[agent]`` model holds the
rules of the HTTP endpoint that need no I/O: a bind address other than loopback needs a token,
a wildcard bind needs ``allowed_hosts``, a token has a usable shape. Reading a ``token_file``,
binding and checking requests belong to :mod:`switchboard.agent_http`.
"""

from __future__ import annotations

import ipaddress
import os
import re
import sys
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, SecretStr, ValidationError, model_validator

from switchboard.protocol import CAPABILITY_PATHS, Grant

__all__ = [
    "DEFAULT_GRANT",
    "HANDLE_PATTERN",
    "MIN_TOKEN_LENGTH",
    "UNSERVED_LEAVES",
    "AgentConfig",
    "AgentEntry",
    "AgentRole",
    "Config",
    "ConfigError",
    "ConnectorConfig",
    "StoreConfig",
    "SubscriptionAllow",
    "demo_config",
    "demo_connector_command",
    "expand_env",
    "is_loopback",
    "is_wildcard",
    "load_config",
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


class ConfigError(Exception):
    """The configuration cannot be used; the message says which key and why."""


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
    env: dict[str, str] = Field(default_factory=dict)
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
        return self

    @model_validator(mode="after")
    def _grant_servable(self) -> ConnectorConfig:
        for entry in self.grant:
            leaves = unserved_only(entry)
            if leaves:
                why = "; ".join(f"{leaf}: {UNSERVED_LEAVES[leaf]}" for leaf in leaves)
                raise ValueError(
                    f"grant entry {entry!r} of connector {self.id!r} can only grant what "
                    f"Switchboard cannot serve ({why}); remove it from `grant`"
                )
        return self


class StoreConfig(_Strict):
    path: str = "switchboard.sqlite"
    synchronous: Literal["normal", "full"] = "normal"
    snapshot_every: int = Field(
        default=10_000, ge=1, description="decision events between two decision-log snapshots"
    )


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
    port: int = Field(default=8765, ge=0, le=65535, description="0: any free port")
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
        return self


class Config(_Strict):
    connectors: list[ConnectorConfig] = Field(default_factory=list)
    store: StoreConfig = Field(default_factory=StoreConfig)
    agent: AgentConfig = Field(default_factory=AgentConfig)
    agents: list[AgentEntry] = Field(
        default_factory=list,
        description="the agent identities; empty: [agent] is the one agent (docs/agents.md)",
    )
    log_level: str = "INFO"

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


_REFERENCE = re.compile(r"\$\$\{|\$\{([A-Za-z_][A-Za-z0-9_]*)\}|\$\{")


def _expand_text(text: str, where: str, env: Mapping[str, str], problems: list[str]) -> str:
    def one(match: re.Match[str]) -> str:
        whole = match.group(0)
        if whole == "$${":
            return "${"
        name = match.group(1)
        if name is None:
            problems.append(
                f"{where}: `${{` does not start a reference like ${{NAME}} (letters, digits, _); "
                "write $${ for a literal ${"
            )
            return whole
        if name not in env:
            problems.append(
                f"{where}: the environment variable {name} is not set (used as ${{{name}}}); "
                f"set it in the environment that runs switchboard, or write $${{{name}}} for "
                "the literal text"
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

    ``${NAME}`` is the value of the environment variable ``NAME``; ``$${`` is a literal ``${``;
    any other ``$`` is kept as it is. Keys are never expanded, and a value is expanded once (a
    variable's value is not searched for references).

    Raises:
        ConfigError: naming every key that refers to an unset variable or holds a ``${`` that
            is not a reference.
    """
    problems: list[str] = []
    expanded = _expand_value(data, "", env, problems)
    if problems:
        raise ConfigError("; ".join(problems))
    assert isinstance(expanded, dict)
    return expanded


def load_config(path: str | Path, *, env: Mapping[str, str] | None = None) -> Config:
    """Read, expand (``${NAME}`` from ``env``, default the process environment) and validate a
    TOML config file, raising :class:`ConfigError` with a clear reason."""
    p = Path(path)
    try:
        data = tomllib.loads(p.read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise ConfigError(f"config file {p} does not exist") from exc
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"config file {p} is not valid TOML: {exc}") from exc
    try:
        data = expand_env(data, os.environ if env is None else env)
    except ConfigError as exc:
        raise ConfigError(f"config file {p}: {exc}") from exc
    try:
        return Config.model_validate(data)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(x) for x in e['loc']) or '(top)'}: {e['msg']}" for e in exc.errors()
        )
        raise ConfigError(f"config file {p} is invalid: {problems}") from exc


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
