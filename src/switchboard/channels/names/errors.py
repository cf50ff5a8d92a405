"""Why a typed name did not pick exactly one channel.

:class:`ChannelNameError` and its kinds (ambiguous, unknown, an own channel gone, inbound-only,
invalid), each carrying the data the caller needs: candidates, suggestions, the channel.

What it deliberately does not know: how the candidates, suggestions or texts were found.
"""

from __future__ import annotations

from collections.abc import Sequence

from switchboard.channels.errors import ChannelsError
from switchboard.channels.names.tiers import Tier
from switchboard.channels.names.wording import LOOKUP, Caller, Choice, ambiguous_text, own_gone_text
from switchboard.channels.ref import ChannelRef

__all__ = [
    "AmbiguousName",
    "ChannelNameError",
    "Choice",
    "InboundOnly",
    "InvalidName",
    "OwnChannelGone",
    "UnknownName",
]


class ChannelNameError(ChannelsError):
    """A name did not pick one usable channel, so nothing was chosen.

    What it knows: the refusals of name resolution and the data each carries for the
    caller. The hierarchy::

        ChannelNameError            a name did not pick one usable channel; nothing was chosen ├──
        AmbiguousName           several channels answer to it (never resolved by a guess) ├──
        UnknownName             no registered channel answers to it │   └── OwnChannelGone      it
        is the turn's own channel, whose server withdrew it ├── InboundOnly             it picks a
        channel that takes no speech └── InvalidName             the name or the server id beside it
        is empty

    Every refusal's message says which channel or server, what did not happen and what to do next;
    the words come from :mod:`~switchboard.channels.names.wording`, chosen by the resolver.

    Attributes:
        name: The name exactly as given.
    """

    def __init__(self, name: str, message: str) -> None:
        super().__init__(message)
        self.name = name


class AmbiguousName(ChannelNameError):
    """Several channels answer to one name; none was chosen.

    Attributes:
        name: The name exactly as given.
        candidates: Every channel the name answers to, in lookup order.
        names: For each candidate, the string that picks it alone, or None when none does
            (then only its channel id together with its server id reaches it).
        choices: The candidates with their names, labels and whether they are gone.
        tier: The kind of name that matched them (:attr:`Tier.OWN` for the turn's own
            channels sharing an id).
        server_id: The server the lookup was restricted to, if any.
        more: A partial DM name fits even more channels than ``candidates`` lists.
    """

    def __init__(
        self,
        name: str,
        choices: Sequence[Choice],
        *,
        tier: Tier = Tier.NAME,
        caller: Caller = LOOKUP,
        server_id: str | None = None,
        more: bool = False,
    ) -> None:
        self.choices = tuple(choices)
        self.candidates: tuple[ChannelRef, ...] = tuple(c.ref for c in self.choices)
        self.names: tuple[str | None, ...] = tuple(c.name for c in self.choices)
        self.tier = tier
        self.server_id = server_id
        self.more = more
        text = ambiguous_text(name, self.choices, tier, caller, server_id=server_id, more=more)
        super().__init__(name, text)

    @property
    def own(self) -> bool:
        """Whether the candidates are the turn's own channels sharing the name as their id."""
        return self.tier is Tier.OWN


class UnknownName(ChannelNameError):
    """No registered channel answers to a name.

    Attributes:
        name: The name exactly as given.
        suggestions: A few registered names near it (possibly none), each picking one channel.
        server_id: The server the lookup was restricted to, if any.
    """

    def __init__(
        self,
        name: str,
        message: str,
        suggestions: Sequence[str] = (),
        *,
        server_id: str | None = None,
    ) -> None:
        super().__init__(name, message)
        self.suggestions = tuple(suggestions)
        self.server_id = server_id


class OwnChannelGone(UnknownName):
    """The name is the id of the turn's own channel, and its server no longer registers it.

    The name stays bound to that channel: another server's channel with the same id is never
    reached through it (channel-registry.md §3.6).

    Attributes:
        ref: The turn's own channel the name is bound to.
    """

    def __init__(self, name: str, ref: ChannelRef, caller: Caller = LOOKUP) -> None:
        super().__init__(name, own_gone_text(name, ref, caller), server_id=ref.server_id)
        self.ref = ref


class InboundOnly(ChannelNameError):
    """The name picks a channel its server declared inbound-only, so no speech goes there.

    Attributes:
        ref: The refused channel (``ref.channel_id`` tells a refusal from "nothing matched").
    """

    def __init__(self, name: str, ref: ChannelRef, message: str) -> None:
        super().__init__(name, message)
        self.ref = ref


class InvalidName(ChannelNameError):
    """The name, or a server id given beside it, is empty: nothing was looked up."""
