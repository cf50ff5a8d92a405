"""Switchboard's TOML configuration, validated with pydantic.

A config file names the connectors (a command to spawn over stdio, or a ``tcp://`` /
``ws://`` URL to dial), the host's grant policy for each, the store, and how the agent
reaches Switchboard. Everything has a default, so :func:`demo_config` can build the embedded
default without a file. See docs/configuration.md for every key.

It also knows which capability leaves Switchboard can serve: a ``grant`` entry that can only
ever match a leaf Switchboard answers with ``-32601`` (or never sends) is refused when the file
is loaded (:data:`UNSERVED_LEAVES`). It does not know what a connector advertises; the session
intersects the grant with that at the handshake.
"""

from __future__ import annotations

import sys
import tomllib
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from switchboard.protocol import CAPABILITY_PATHS, Grant

__all__ = [
    "DEFAULT_GRANT",
    "UNSERVED_LEAVES",
    "AgentConfig",
    "Config",
    "ConfigError",
    "ConnectorConfig",
    "StoreConfig",
    "SubscriptionAllow",
    "demo_config",
    "demo_connector_command",
    "load_config",
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
    manifest_fetch_interval: float = Field(
        default=1.0,
        ge=0,
        description="least seconds between two mcpl/manifest fetches on one connection (§17.8)",
    )

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


class AgentConfig(_Strict):
    name: str = "agent"
    transport: Literal["stdio", "http", "none"] = "stdio"
    host: str = "127.0.0.1"
    port: int = 8765
    home: str | None = Field(
        default=None,
        min_length=1,
        description="the channel plain speech goes to, named as channel_list names it; "
        "resolved at the start of each turn (None: the channel of the turn's messages)",
    )
    prose: Literal["locus", "explicit", "hybrid", "disabled"] = Field(
        default="explicit", description="how the speak tool routes prose without a >> target"
    )


class Config(_Strict):
    connectors: list[ConnectorConfig] = Field(default_factory=list)
    store: StoreConfig = Field(default_factory=StoreConfig)
    agent: AgentConfig = Field(default_factory=AgentConfig)
    log_level: str = "INFO"

    @model_validator(mode="after")
    def _unique_ids(self) -> Config:
        seen: set[str] = set()
        for c in self.connectors:
            if c.id in seen:
                raise ValueError(f"connector id {c.id!r} appears twice")
            seen.add(c.id)
        return self


def load_config(path: str | Path) -> Config:
    """Read and validate a TOML config file, raising :class:`ConfigError` with a clear reason."""
    p = Path(path)
    try:
        data = tomllib.loads(p.read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise ConfigError(f"config file {p} does not exist") from exc
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"config file {p} is not valid TOML: {exc}") from exc
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
