"""Every naming operation of one registry, in one place: ``registry.names``.

:class:`ChannelNames` binds each naming function to one registry's indexes, so callers need not
hold the index; each method calls into the module that owns the rule.

What it deliberately does not know: any rule. It adds no behaviour of its own.
"""

from __future__ import annotations

from switchboard.channels.index import ChannelIndex
from switchboard.channels.names import resolve as _resolve
from switchboard.channels.names import selectors, shown
from switchboard.channels.names.errors import AmbiguousName, UnknownName
from switchboard.channels.names.history import LabelHistory, resolve_durable
from switchboard.channels.names.picking import NO_OWN, Own
from switchboard.channels.names.picking import name_for as _name_for
from switchboard.channels.names.tiers import Match, entries_named, match_name
from switchboard.channels.names.wording import LOOKUP, POST, RUN, SPEECH, Caller
from switchboard.channels.records import ChannelEntry
from switchboard.channels.ref import ChannelRef

__all__ = ["ChannelNames"]


class ChannelNames:
    """The naming operations over one registry's indexes.

    What it knows: which function answers which question about names, bound to one registry's
    indexes so callers need not hold the index. Each method is a thin call into the module that owns
    the rule:

    ==============================  ==============================================  ==========
    question                        method                                          spec
    ==============================  ==============================================  ==========
    what answers to this string     :meth:`~ChannelNames.entries_named`,            §3.1, §4.6
                                    :meth:`~ChannelNames.match`
    which string picks this channel :meth:`~ChannelNames.name_for`                  §3.2
    what do we show for it          :meth:`~ChannelNames.name_shown`,               §3.3, §4.7
                                    :meth:`~ChannelNames.quoted_shown`,
                                    :meth:`~ChannelNames.prose_target_for`
    any name, a ``>>`` target       :meth:`~ChannelNames.resolve`,                  §4.5, §4.6
                                    :meth:`~ChannelNames.resolve_prose_target`
    channel tool arguments          :meth:`~ChannelNames.resolve_tool_channel`,     §3.7, §3.8
                                    :meth:`~ChannelNames.resolve_destination`
    explicit send tools             :meth:`~ChannelNames.send_targets`,             §3.9
                                    :meth:`~ChannelNames.resolve_send_target`
    tools outside the registry      :meth:`~ChannelNames.own_channel_for`,          §3.4-§3.6
                                    :meth:`~ChannelNames.shared_name_refusal`,
                                    :meth:`~ChannelNames.not_on_server`
    old references (never to send)  :meth:`~ChannelNames.resolve_durable`           §2.8
    ==============================  ==============================================  ==========

    ``own`` is always the calling turn's own channels (a collection of
    :class:`~switchboard.channels.ref.ChannelRef`; empty outside a turn). ``caller`` picks the
    wording of refusals (:mod:`~switchboard.channels.names.wording` has presets).
    """

    __slots__ = ("_index",)

    def __init__(self, index: ChannelIndex) -> None:
        self._index = index

    def entries_named(self, name: str) -> tuple[ChannelEntry, ...]:
        """Channels whose id or server-qualified name is exactly ``name`` (§3.1)."""
        return entries_named(self._index, name)

    def channels_named(self, name: str) -> tuple[ChannelRef, ...]:
        """:meth:`entries_named`, as refs."""
        return tuple(e.ref for e in entries_named(self._index, name))

    def match(self, name: str) -> Match | None:
        """The deciding tier of ``name`` and every channel it matched there, or None."""
        return match_name(self._index, name)

    def name_for(self, ref: ChannelRef, own: Own = NO_OWN) -> str | None:
        """The channel id or qualified name that picks ``ref`` alone, or None (§3.2)."""
        return _name_for(self._index, ref, own)

    def name_shown(self, ref: ChannelRef, own: Own = NO_OWN) -> str:
        """The name shown for ``ref``, registered or not (§3.3)."""
        return shown.name_shown(self._index, ref, own)

    def quoted_shown(self, ref: ChannelRef, own: Own = NO_OWN) -> str:
        """:meth:`name_shown`, quoted for a text."""
        return shown.quoted_shown(self._index, ref, own)

    def prose_target_for(self, ref: ChannelRef, own: Own = NO_OWN) -> str | None:
        """The ``>>`` token that addresses ``ref`` in speech, or None (§4.7)."""
        return shown.prose_target_for(self._index, ref, own)

    def resolve(
        self,
        name: str,
        *,
        server_id: str | None = None,
        own: Own = NO_OWN,
        caller: Caller = LOOKUP,
    ) -> ChannelEntry:
        """The one channel any kind of name picks (§4.6 order; own rule without server id)."""
        return _resolve.resolve(self._index, name, server_id, own, caller)

    def resolve_prose_target(
        self, spec: str, *, for_speech: bool = False, own: Own = NO_OWN, caller: Caller = SPEECH
    ) -> ChannelEntry:
        """The channel a ``>>`` target picks, refusing inbound-only ones for speech (§4.5)."""
        return _resolve.resolve_prose_target(
            self._index, spec, for_speech=for_speech, own=own, caller=caller
        )

    def resolve_tool_channel(
        self,
        channel_id: str,
        *,
        server_id: str | None = None,
        own: Own = NO_OWN,
        caller: Caller = RUN,
    ) -> ChannelEntry:
        """The channel a lifecycle tool's ``channelId``/``serverId`` select (§3.7)."""
        return selectors.resolve_tool_channel(self._index, channel_id, server_id, own, caller)

    def resolve_destination(
        self,
        channel_id: str,
        *,
        server_id: str | None = None,
        own: Own = NO_OWN,
        caller: Caller = POST,
    ) -> ChannelEntry:
        """The channel a publish destination selects; empty strings are refused (§3.8)."""
        return selectors.resolve_destination(self._index, channel_id, server_id, own, caller)

    def send_targets(self, raw: str, *, server_id: str | None = None) -> tuple[ChannelEntry, ...]:
        """Channels an explicit send tool's ``raw`` names: by id, else by raw id (§3.9)."""
        return selectors.send_targets(self._index, raw, server_id)

    def resolve_send_target(self, raw: str, *, server_id: str | None = None) -> ChannelRef | None:
        """The one channel :meth:`send_targets` finds, else None."""
        return selectors.resolve_send_target(self._index, raw, server_id)

    def own_channel_for(self, name: str, own: Own, *, caller: Caller = RUN) -> ChannelEntry | None:
        """The own rule alone: None when no own channel has the id ``name`` (§3.6).

        Raises:
            AmbiguousName: Own channels on several servers have that id.
            OwnChannelGone: The own channel with that id is no longer registered.
        """
        return _resolve.bind_own(self._index, name, own, caller)

    def shared_name_refusal(
        self, name: str, *, caller: Caller = RUN, own: Own = NO_OWN
    ) -> AmbiguousName | None:
        """The refusal for a name several channels answer to, or None (§3.4)."""
        return selectors.shared_name_refusal(self._index, name, caller, own)

    def not_on_server(
        self, channel_id: str, server_id: str, *, caller: Caller = RUN
    ) -> UnknownName:
        """The refusal of an id given with a server that lacks it, saying where it is (§3.5)."""
        return _resolve.not_on_server(self._index, channel_id, server_id, caller)

    def resolve_durable(self, history: LabelHistory, name: str) -> str | None:
        """A bare channel id for ``name``, live first, then ``history``; never for sending."""
        return resolve_durable(self._index, history, name)
