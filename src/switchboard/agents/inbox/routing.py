"""Which agents a stored message is for: :class:`Router`.

Mail goes to its recipient only; channel traffic goes to the agents whose home it is and the
agents it addresses, else to the untargeted agents; an agent that left a channel hears none of
it. The rules, addressing included, are docs/agents.md, "Routing". What is derived from the
roster, the registry and the leaves is cached and rebuilt only when they change, so routing a
message is O(its text), with one scan of the text for every agent at once.

What it deliberately does not know: the inbox's cursors, tune-outs, MCP, and how mail is
deposited.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

import structlog

from switchboard.agents.roster.roster import Roster
from switchboard.channels import ChannelNameError, ChannelRef, ChannelRegistry
from switchboard.events import (
    ChannelsChanged,
    ChannelsRegistered,
    ChannelsRemoved,
    ConnectorExited,
    HostEvent,
)
from switchboard.store import LeaveStore, StoredMessage
from switchboard.store.mailmark import MAIL_SERVER, is_mail, mail_recipient

__all__ = ["HANDLE_MENTION", "Router", "handles_in", "message_text_of"]

log = structlog.get_logger(__name__)

HANDLE_MENTION = re.compile(r"(?<![\w@])@([\w-]+)(?![\w-]|\.\w)")
"""An ``@word`` that stands as a whole word (see the module docstring); group 1 is the word."""


def handles_in(text: str) -> set[str]:
    """The lower-cased words of every whole-word ``@word`` in ``text`` (trailing ``-`` kept
    and also stripped, so ``@bob--`` gives ``bob--`` and ``bob``)."""
    out: set[str] = set()
    for match in HANDLE_MENTION.finditer(text):
        word = match.group(1).lower()
        out.add(word)
        bare = word.rstrip("-")
        if bare:
            out.add(bare)
    return out


def message_text_of(content: object) -> str:
    """The ``text`` blocks of MCPL ``content``, joined by newlines."""
    if not isinstance(content, list):
        return ""
    return "\n".join(
        str(b.get("text", ""))
        for b in content
        if isinstance(b, Mapping) and b.get("type") == "text"
    )


def _platform_pattern(strings: Iterable[str]) -> re.Pattern[str] | None:
    """One matcher for every platform mention string, longest first; a string that begins
    (ends) with a word character must not be preceded (followed) by one."""
    parts = []
    for s in sorted(set(strings), key=lambda s: (-len(s), s)):
        part = re.escape(s)
        if re.match(r"\w", s):
            part = r"(?<!\w)" + part
        if re.search(r"\w$", s):
            part += r"(?!\w)"
        parts.append(part)
    return re.compile("|".join(parts)) if parts else None


@dataclass(frozen=True, slots=True)
class _View:
    """What routing derives from the roster, registry and leaves at one moment."""

    key: tuple[int, int, int, int]
    names: frozenset[str]
    homes: Mapping[ChannelRef, tuple[str, ...]]
    home_names: Mapping[str, tuple[str, ...]]
    handles: Mapping[str, str]
    platform: re.Pattern[str] | None
    platform_names: Mapping[str, tuple[str, ...]]
    untargeted: frozenset[str]
    left: Mapping[ChannelRef, frozenset[str]]


def _grouped(pairs: Iterable[tuple[Any, str]]) -> dict[Any, tuple[str, ...]]:
    out: dict[Any, tuple[str, ...]] = {}
    for key, name in pairs:
        if name not in out.get(key, ()):
            out[key] = (*out.get(key, ()), name)
    return out


class Router:
    """Decides which agents each stored message is for (see the module docstring)."""

    __slots__ = ("_channels", "_leaves", "_registry", "_roster", "_view")

    def __init__(self, roster: Roster, registry: ChannelRegistry, leaves: LeaveStore) -> None:
        self._roster = roster
        self._registry = registry
        self._leaves = leaves
        self._channels = 0
        self._view: _View | None = None

    # -- the cache ------------------------------------------------------------------------------

    #: The events :meth:`observe` takes (it subscribes to only these).
    OBSERVES: ClassVar[tuple[type, ...]] = (
        ChannelsRegistered,
        ChannelsChanged,
        ChannelsRemoved,
        ConnectorExited,
    )

    def observe(self, event: HostEvent) -> None:
        """A host event listener: channels registered, changed or dropped invalidate the
        homes resolved so far."""
        if isinstance(
            event, ChannelsRegistered | ChannelsChanged | ChannelsRemoved | ConnectorExited
        ):
            self._channels += 1

    def _current(self) -> _View:
        key = (self._roster.version, self._channels, len(self._registry), self._leaves.version)
        view = self._view
        if view is None or view.key != key:
            view = self._view = self._build(key)
        return view

    def _build(self, key: tuple[int, int, int, int]) -> _View:
        roster = self._roster
        homes: list[tuple[ChannelRef, str]] = []
        home_names: list[tuple[str, str]] = []
        platform: list[tuple[str, str]] = []
        for identity in roster:
            if identity.home is not None:
                try:
                    homes.append((self._registry.resolve(identity.home).ref, identity.name))
                except ChannelNameError:
                    home_names.append((identity.home, identity.name))
            platform += [(s, identity.name) for s in identity.mentions if s]
        left: dict[ChannelRef, set[str]] = {}
        for agent, server_id, channel_id in self._leaves.rows():
            left.setdefault(ChannelRef(server_id, channel_id), set()).add(agent)
        return _View(
            key=key,
            names=frozenset(i.name for i in roster),
            homes=_grouped(homes),
            home_names=_grouped(home_names),
            handles={i.name.lower(): i.name for i in roster},
            platform=_platform_pattern(s for s, _ in platform),
            platform_names=_grouped(platform),
            untargeted=frozenset(i.name for i in roster.untargeted()),
            left={ref: frozenset(agents) for ref, agents in left.items()},
        )

    # -- the rule -------------------------------------------------------------------------------

    def _listed(self, view: _View, item: object, into: set[str]) -> None:
        """Add the agents one ``metadata.mentions`` item names to ``into``."""
        ids: list[str] = []
        words: list[str] = []
        if isinstance(item, str):
            ids.append(item)
            words.append(item)
        elif isinstance(item, Mapping):
            ids += [str(item[k]) for k in ("id", "userId") if isinstance(item.get(k), str | int)]
            words += [str(item[k]) for k in ("handle", "username", "name") if item.get(k)]
        for i in ids:
            for form in (i, f"<@{i}>", f"<@!{i}>"):
                into.update(view.platform_names.get(form, ()))
        for w in words:
            name = view.handles.get(w.removeprefix("@").lower())
            if name is not None:
                into.add(name)

    def _addressed(self, view: _View, text: str, metadata: object) -> set[str]:
        """The roster agents a message with ``text`` and ``metadata`` addresses."""
        out: set[str] = set()
        if "@" in text:
            handles = view.handles
            out.update(handles[w] for w in handles_in(text) if w in handles)
        if view.platform is not None:
            for match in view.platform.finditer(text):
                out.update(view.platform_names.get(match.group(0), ()))
        if isinstance(metadata, Mapping):
            listed = metadata.get("mentions")
            if isinstance(listed, list):
                for item in listed:
                    self._listed(view, item, out)
        return out

    def _channel_targets(
        self, view: _View, server_id: str, channel_id: str, text: str, metadata: object
    ) -> set[str]:
        ref = ChannelRef(server_id, channel_id)
        out = set(view.homes.get(ref, ()))
        if view.home_names:
            out.update(view.home_names.get(channel_id, ()))
            out.update(view.home_names.get(f"{server_id}:{channel_id}", ()))
        out |= self._addressed(view, text, metadata)
        if not out:
            out = set(view.untargeted)
        left = view.left.get(ref)
        if left:
            out -= left
            if not out:
                out = set(view.untargeted - left) or set(view.untargeted)
        return out

    def targets(self, m: StoredMessage) -> frozenset[str]:
        """The roster agents ``m`` is routed to (readers outside the roster aside)."""
        view = self._current()
        if is_mail(m):
            recipient = mail_recipient(m)
            return frozenset([recipient]) if recipient in view.names else frozenset()
        if len(view.names) == 1:
            return view.names
        text = message_text_of(m.content)
        return frozenset(self._channel_targets(view, m.server_id, m.channel_id, text, m.metadata))

    def reader(self, agent: str) -> Callable[[StoredMessage], bool]:
        """The batch form: a test of whether a message is routed to ``agent``, with what the
        router derives looked up once (use it for one batch; :meth:`routes` is one call)."""
        view = self._current()
        if agent not in view.names:
            return _not_mail
        if len(view.names) == 1:
            return lambda m: not is_mail(m) or mail_recipient(m) == agent

        def routes(m: StoredMessage) -> bool:
            if m.server_id == MAIL_SERVER:
                return mail_recipient(m) == agent
            text = message_text_of(m.content)
            return agent in self._channel_targets(view, m.server_id, m.channel_id, text, m.metadata)

        return routes

    def routes(self, agent: str, m: StoredMessage) -> bool:
        """Whether ``m`` is routed to the reader ``agent`` (see the module docstring)."""
        return self.reader(agent)(m)

    def routed(self, agent: str, batch: Iterable[StoredMessage]) -> list[StoredMessage]:
        """The messages of ``batch`` routed to ``agent``, in order."""
        return list(filter(self.reader(agent), batch))

    def routes_every(self, agent: str, server_id: str) -> bool:
        """Whether every wire message of ``server_id`` is routed to ``agent``, whatever it
        says (:meth:`routes_wire` would answer True without reading it): the agent is alone,
        or not on the roster, and the server is not the mail server."""
        if server_id == MAIL_SERVER:
            return False
        names = self._current().names
        return agent not in names or len(names) == 1

    def wire_reader(self, agent: str, server_id: str) -> Callable[[Mapping[str, Any]], bool]:
        """The batch form of :meth:`routes_wire` for the messages of one server, with what the
        router derives looked up once (use it for one batch)."""
        view = self._current()
        if server_id == MAIL_SERVER:
            if agent not in view.names:
                return lambda _m: False
            return lambda m: str(m.get("channelId") or "").removeprefix("@") == agent
        if agent not in view.names or len(view.names) == 1:
            return lambda _m: True
        targets = self._channel_targets

        def routes(m: Mapping[str, Any]) -> bool:
            text = message_text_of(m.get("content"))
            channel_id = str(m.get("channelId") or "")
            return agent in targets(view, server_id, channel_id, text, m.get("metadata"))

        if agent in view.untargeted or any(agent in n for n in view.platform_names.values()):
            return routes
        # An agent that takes no untargeted traffic and has no platform mention string is
        # routed a message only in its home or when named: most messages an instance reads
        # back are neither, and are passed over without their text being joined.
        homes = {
            ref.channel_id
            for ref, names in view.homes.items()
            if ref.server_id == server_id and agent in names
        }
        qualified = f"{server_id}:"
        for name, names in view.home_names.items():
            if agent in names:
                homes.add(name)
                if name.startswith(qualified):
                    homes.add(name[len(qualified) :])

        def maybe(m: Mapping[str, Any]) -> bool:
            if str(m.get("channelId") or "") in homes:
                return routes(m)
            meta = m.get("metadata")
            if isinstance(meta, Mapping) and meta.get("mentions"):
                return routes(m)
            content = m.get("content")
            if isinstance(content, list):
                for block in content:
                    if (
                        isinstance(block, Mapping)
                        and block.get("type") == "text"
                        and "@" in str(block.get("text", ""))
                    ):
                        return routes(m)
            return False

        return maybe

    def routes_wire(self, agent: str, server_id: str, message: Mapping[str, Any]) -> bool:
        """Whether a wire message of ``server_id`` (as ``MessagesAccepted`` and
        ``PushAccepted`` carry it) is routed to ``agent``."""
        view = self._current()
        if server_id == MAIL_SERVER:
            to = str(message.get("channelId") or "")
            return agent in view.names and to.removeprefix("@") == agent
        if agent not in view.names or len(view.names) == 1:
            return True
        text = message_text_of(message.get("content"))
        channel_id = str(message.get("channelId") or "")
        return agent in self._channel_targets(
            view, server_id, channel_id, text, message.get("metadata")
        )

    # -- leaving a channel others want ----------------------------------------------------------

    def wanted_by(self, ref: ChannelRef) -> tuple[str, ...]:
        """The roster agents that want ``ref``: it is their home and they did not leave it."""
        view = self._current()
        wanting = set(view.homes.get(ref, ()))
        wanting.update(view.home_names.get(ref.channel_id, ()))
        wanting.update(view.home_names.get(f"{ref.server_id}:{ref.channel_id}", ()))
        wanting -= view.left.get(ref, frozenset())
        return tuple(sorted(wanting))

    def has_left(self, agent: str, ref: ChannelRef) -> bool:
        """Whether ``agent`` left ``ref``."""
        return (agent, ref.server_id, ref.channel_id) in self._leaves

    def leave(self, agent: str, ref: ChannelRef) -> bool:
        """``agent`` leaves ``ref`` (durably); False when it had left it already.

        Raises:
            StoreError: it could not be recorded (nothing changed).
        """
        return self._leaves.leave(agent, ref.server_id, ref.channel_id)

    def rejoin(self, agent: str, ref: ChannelRef) -> bool:
        """``agent`` rejoins ``ref`` (durably); False when it had not left it.

        Raises:
            StoreError: it could not be recorded (nothing changed).
        """
        return self._leaves.rejoin(agent, ref.server_id, ref.channel_id)

    # -- arrivals that no host event carries ----------------------------------------------------


def _not_mail(m: StoredMessage) -> bool:
    """A reader outside the roster sees every channel message and no mail."""
    return not is_mail(m)
