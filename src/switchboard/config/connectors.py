"""The ``[[connectors]]`` section: how to reach each connector and the grant it is offered.

A ``grant`` entry that matches no capability path is refused when the file is loaded. What a
connector advertises is the session's business: it intersects the grant with that at the
handshake, and leaves out the inference leaves when no agent could answer for the connector
(:mod:`switchboard.connections.inference`).
"""

from __future__ import annotations

import difflib
from typing import Literal
from urllib.parse import urlsplit

from pydantic import (
    Field,
    field_validator,
    model_validator,
)

from switchboard.config.common import Strict
from switchboard.protocol import CAPABILITY_PATHS, path_matches

__all__ = [
    "DEFAULT_GRANT",
    "DIAL_SCHEMES",
    "ConnectorConfig",
    "SubscriptionAllow",
    "grant_entry_problem",
]


#: The grant Switchboard offers a connector when its config says nothing. It is intersected
#: with what the connector advertises (MCPL §5.4). ``tools`` is in it because real chat
#: connectors list it in the ``uses`` of every feature set (docs/configuration.md has the
#: table); without it they disable all their sets and drop every message. The inference leaves
#: are served through the answering agent's MCP sampling (docs/inference.md), and the context
#: hook leaves show and add only what the connector could already say: ``observe`` shows it the
#: text of its own messages that began a turn, and an injection before or after the user's
#: text is no more than a message it could send. ``…inject.system`` is never in it.
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
    "inferenceRequest",
    "inferenceRequest.streaming",
    "modelInfo",
    "inferenceLifecycle",
    "contextHooks.beforeInference.observe",
    "contextHooks.beforeInference.inject.beforeUser",
    "contextHooks.beforeInference.inject.afterUser",
)


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


#: The URL schemes a connector's ``url`` may use.
DIAL_SCHEMES: tuple[str, ...] = ("tcp", "ws", "wss")


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


class SubscriptionAllow(Strict):
    """A subscription allow-list: these channels are opened whenever they are discovered."""

    allow: list[str] = Field(
        default_factory=list, description="channel ids or raw address ids (address.channelId)"
    )


class ConnectorConfig(Strict):
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
    inference_agent: str | None = Field(
        default=None,
        description="the agent (@handle) whose MCP client answers this connector's "
        "inference/request through sampling; None: the agent that owns default delivery "
        "(docs/inference.md)",
    )
    inference_timeout: float = Field(
        default=120.0,
        gt=0,
        description="seconds an inference/request may take before it is answered with an "
        "error (the sampling request is cancelled)",
    )
    max_inference_requests: int = Field(
        default=2,
        ge=1,
        description="most inference/request this connector may have in flight at once; one "
        "past it is refused at once (-32603, data.reason inference-busy)",
    )

    @field_validator("inference_agent")
    @classmethod
    def _a_handle(cls, value: str | None) -> str | None:
        if value is not None and (not value.startswith("@") or len(value) < 2):
            raise ValueError(
                f'inference_agent {value!r} is not an agent handle: write it as "@name", '
                "the handle of an agent in [[agents]] (or [agent])"
            )
        return value

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
        return self
