"""The agents one Switchboard serves, as they are now: :class:`Roster` and :class:`Identity`.

Each agent is an :class:`Identity` keyed by its name (its handle without the ``@``), with its
home, mentions, roles and token digest; the roster answers who a token proves and who receives
untargeted traffic (docs/agents.md).

What it deliberately does not know: the directory (the address table in the store), HTTP,
sessions and routing.
"""

from __future__ import annotations

import hmac
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Final, Literal

from switchboard.config import AgentEntry
from switchboard.directory import hash_token

__all__ = ["SYSTEM_SENDER", "Identity", "IdentityKind", "Roster", "token_digest"]

SYSTEM_SENDER: Final = "switchboard"
"""The sender name of the host's own mail (``@switchboard``), when no agent has that name."""

IdentityKind = Literal["configured", "task"]


def token_digest(token: str) -> str:
    """The digest the roster keeps of a bearer token: the directory's stored form of a token
    (hex SHA-256), so one token has one digest everywhere."""
    return hash_token(token)


@dataclass(slots=True)
class Identity:
    """One agent identity (see :class:`Roster`).

    Attributes:
        name: The key: the handle without ``@``.
        handle: ``@name``.
        home: The home channel's name as channel_list names it, or None.
        prose: How ``speak`` routes prose for this agent.
        default_delivery: This agent gets untargeted traffic when nobody receives it.
        receives_untargeted: This agent gets untargeted traffic.
        mentions: Platform mention strings that address this agent (e.g. ``<@123>``).
        tags: Directory tags.
        description: Directory description.
        kind: ``configured`` (persistent, from the config) or ``task`` (made at run time).
        idle_ttl: Seconds without a session after which the agent ends; None: never.
        parent: The name of the agent a task reports its result to, or None.
        deadline: Unix seconds at which a task ends, or None.
        idle_timeout: Seconds without a tool call after which a task ends, or None.
        turn_limit: Turns after which a task ends, or None.
        incarnation: Counts how often this identity was (re)started; 1 for the first.
        token_digest: SHA-256 of the identity's bearer token, or None.
    """

    name: str
    handle: str
    home: str | None = None
    prose: Literal["locus", "explicit", "hybrid", "disabled"] = "hybrid"
    default_delivery: bool = False
    receives_untargeted: bool = False
    mentions: tuple[str, ...] = ()
    tags: tuple[str, ...] = ()
    description: str = ""
    kind: IdentityKind = "configured"
    idle_ttl: float | None = None
    parent: str | None = None
    deadline: float | None = None
    idle_timeout: float | None = None
    turn_limit: int | None = None
    incarnation: int = 1
    token_digest: str | None = field(default=None, repr=False)

    @classmethod
    def from_entry(cls, entry: AgentEntry, *, token: str | None = None) -> Identity:
        """The configured identity ``entry`` describes, proven by ``token`` when given."""
        return cls(
            name=entry.name,
            handle=entry.handle,
            home=entry.home,
            prose=entry.prose,
            default_delivery="default_delivery" in entry.roles,
            receives_untargeted="receives_untargeted" in entry.roles,
            mentions=tuple(entry.mentions),
            tags=tuple(entry.tags),
            description=entry.description,
            idle_ttl=entry.idle_ttl,
            token_digest=token_digest(token) if token is not None else None,
        )


class Roster:
    """The live agent identities.

    What it knows (docs/agents.md):

    - **Identities.** Each agent is an :class:`Identity` keyed by its *name* (its handle without the
      ``@``; its inbox cursor, turns, locus and tune-outs are kept under that name). The configured
      agents come from ``[[agents]]`` (or the one-agent ``[agent]`` shorthand) and are persistent;
      task agents are added at run time and end.
    - **Roles.** Exactly one live agent owns default delivery; any number receive untargeted
      traffic. With no agent receiving untargeted traffic, the default-delivery agent gets it.
    - **Tokens.** A bearer token proves one identity. The roster keeps only SHA-256 digests of the
      tokens, so the lookup compares digests and no token is ever listed.
    - **A version.** Every change bumps :attr:`Roster.version`, so a router can cache what it
      derives from the roster (homes, mentions) and know when to derive it again.
    """

    __slots__ = ("_by_digest", "_by_name", "version")

    def __init__(self, identities: Sequence[Identity] = ()) -> None:
        self._by_name: dict[str, Identity] = {}
        self._by_digest: dict[str, str] = {}
        self.version = 0
        for identity in identities:
            self.add(identity)

    @classmethod
    def from_entries(
        cls, entries: Sequence[AgentEntry], tokens: dict[str, str] | None = None
    ) -> Roster:
        """The roster of the configured ``entries``; ``tokens`` maps a name to its token when
        it was read from elsewhere (a ``token_file``)."""
        tokens = tokens or {}
        made = []
        for entry in entries:
            token = tokens.get(entry.name)
            if token is None and entry.token is not None:
                token = entry.token.get_secret_value()
            made.append(Identity.from_entry(entry, token=token))
        if len(made) == 1:
            made[0].default_delivery = True
        return cls(made)

    def __len__(self) -> int:
        return len(self._by_name)

    def __iter__(self) -> Iterator[Identity]:
        return iter(list(self._by_name.values()))

    def __contains__(self, name: object) -> bool:
        return name in self._by_name

    def get(self, name: str) -> Identity | None:
        """The identity named ``name`` (a handle's ``@`` is ignored), or None."""
        return self._by_name.get(name[1:] if name.startswith("@") else name)

    def by_token(self, token: str) -> Identity | None:
        """The identity ``token`` proves, or None (digests compared in constant time)."""
        if not token:
            return None
        digest = token_digest(token)
        name = self._by_digest.get(digest)
        if name is None:
            return None
        identity = self._by_name.get(name)
        if identity is None or identity.token_digest is None:
            return None
        return identity if hmac.compare_digest(identity.token_digest, digest) else None

    @property
    def default(self) -> Identity | None:
        """The agent that owns default delivery, or None when none is live."""
        for identity in self._by_name.values():
            if identity.default_delivery:
                return identity
        return None

    def untargeted(self) -> list[Identity]:
        """Who gets untargeted traffic: those that receive it, else the default agent."""
        out = [i for i in self._by_name.values() if i.receives_untargeted]
        if out:
            return out
        default = self.default
        return [default] if default is not None else []

    def add(self, identity: Identity) -> None:
        """Add (or replace) ``identity``.

        Raises:
            ValueError: another identity already proves itself with the same token, or a
                second agent would own default delivery.
        """
        if identity.token_digest is not None:
            holder = self._by_digest.get(identity.token_digest)
            if holder is not None and holder != identity.name:
                raise ValueError(f"another agent is proven by the token of {identity.handle}")
        if identity.default_delivery:
            default = self.default
            if default is not None and default.name != identity.name:
                raise ValueError(
                    f"{default.handle} already owns default delivery; {identity.handle} cannot"
                )
        old = self._by_name.get(identity.name)
        if old is not None and old.token_digest is not None:
            self._by_digest.pop(old.token_digest, None)
        self._by_name[identity.name] = identity
        if identity.token_digest is not None:
            self._by_digest[identity.token_digest] = identity.name
        self.version += 1

    def remove(self, name: str) -> Identity | None:
        """Remove the identity named ``name``; return it, or None when there was none."""
        identity = self._by_name.pop(name[1:] if name.startswith("@") else name, None)
        if identity is not None:
            if identity.token_digest is not None:
                self._by_digest.pop(identity.token_digest, None)
            self.version += 1
        return identity
