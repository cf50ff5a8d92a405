"""The ``[agent]`` endpoint and the ``[[agents]]`` identities.

``[agent]`` holds the rules of the HTTP endpoint that need no I/O: a bind address other than
loopback needs a token, a wildcard bind needs ``allowed_hosts``, a token has a usable shape.
Reading a ``token_file``, binding and checking requests belong to :mod:`switchboard.web` and
:mod:`switchboard.agents.http`.
"""

from __future__ import annotations

import re
from typing import Literal

from pydantic import (
    Field,
    SecretStr,
    field_validator,
    model_validator,
)

from switchboard.config.common import Strict, token_problem

__all__ = [
    "HANDLE_PATTERN",
    "SHORTHAND_KEYS",
    "AgentConfig",
    "AgentEntry",
    "AgentRole",
    "home_problem",
]


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


class AgentConfig(Strict):
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


#: An agent's handle: ``@`` and a lower-case word (the directory's agent address grammar).
HANDLE_PATTERN = re.compile(r"@[a-z][a-z0-9-]*")

#: The roles an agent may hold (docs/agents.md, "Routing").
AgentRole = Literal["default_delivery", "receives_untargeted"]

#: The ``[agent]`` keys that describe the one agent of the shorthand; beside ``[[agents]]`` they
#: belong in each agent's own table.
SHORTHAND_KEYS = ("name", "token", "token_file", "home", "prose")


class AgentEntry(Strict):
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
