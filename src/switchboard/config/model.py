"""The whole config: :class:`Config`, its sections and the rules that span them.

Everything has a default, so :func:`~switchboard.config.load.demo_config` builds the embedded
default without a file. See docs/configuration.md for every key.
"""

from __future__ import annotations

import difflib
from typing import Literal

from pydantic import (
    Field,
    field_validator,
    model_validator,
)

from switchboard.config.agents import SHORTHAND_KEYS, AgentConfig, AgentEntry
from switchboard.config.common import LOG_LEVELS, Strict, is_loopback, is_wildcard
from switchboard.config.connectors import ConnectorConfig
from switchboard.config.status import StatusConfig
from switchboard.config.store import ClusterConfig, StoreConfig

__all__ = ["Config"]


class Config(Strict):
    connectors: list[ConnectorConfig] = Field(default_factory=list)
    store: StoreConfig = Field(default_factory=StoreConfig)
    cluster: ClusterConfig | None = Field(
        default=None,
        description="present: this process is one instance of many (docs/cluster.md); "
        'needs [store] backend = "postgres"',
    )
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
        stray = [k for k in SHORTHAND_KEYS if k in self.agent.model_fields_set]
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
    def _inference_agents_known(self) -> Config:
        handles = [e.handle for e in self.roster()]
        for c in self.connectors:
            if c.inference_agent is not None and c.inference_agent not in handles:
                raise ValueError(
                    f"connector {c.id!r}: inference_agent = {c.inference_agent!r} names no "
                    f"configured agent (the agents are {', '.join(handles)}); name one of them, "
                    "or leave it out to let the agent that owns default delivery answer"
                )
        return self

    @model_validator(mode="after")
    def _cluster_on_postgres(self) -> Config:
        if self.cluster is not None and self.store.backend != "postgres":
            raise ValueError(
                "[cluster] shares the durable things between instances, which only a shared "
                'database can do: set backend = "postgres" and `url` in [store] (the SQLite '
                "file of one process cannot be shared), or remove [cluster]"
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
