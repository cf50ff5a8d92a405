"""The words of every name refusal: which channel or server, what did not happen, what next.

What this module knows: how each refusal of name resolution reads, given the facts the
resolver found. Every text names the channel and server concerned, says what did *not* happen
(``nothing ran``, ``nothing was posted``, …, taken from the :class:`Caller`), and ends with
the call to make next when one exists. Names are quoted with JSON string syntax
(``json.dumps(..., ensure_ascii=False)``), so a name with spaces, quotes or colons reads back
unambiguously; a channel that no string picks alone is shown as ``"b:room" on server "a"``
(:func:`on_server`), a display form that no input accepts.

:func:`q` is the one quoting helper of the code base; every text that quotes a name uses it.

What it deliberately does not know: how the facts were found, and the agent's tools: the texts
name no tool (the host words what to call next, :mod:`switchboard.refusals.refusal`). The texts are
Switchboard's own wording; tests check the information they carry, not their sentences.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass

from switchboard.channels.names.tiers import Tier
from switchboard.channels.ref import ChannelRef

__all__ = [
    "DELIVER",
    "LOOKUP",
    "NAME_KINDS",
    "POST",
    "RUN",
    "SPEECH",
    "Caller",
    "Choice",
    "ambiguous_text",
    "and_list",
    "elsewhere_text",
    "empty_server_text",
    "inbound_only_text",
    "no_dm_text",
    "not_on_server_text",
    "on_server",
    "own_gone_text",
    "q",
    "unknown_text",
]


def q(text: str) -> str:
    """``text`` quoted as a JSON string (non-ASCII kept as it is)."""
    return json.dumps(text, ensure_ascii=False)


def on_server(ref: ChannelRef) -> str:
    """``"<channel id>" on server "<server id>"``: how a channel no name picks is shown."""
    return f"{q(ref.channel_id)} on server {q(ref.server_id)}"


def and_list(items: Sequence[str], conjunction: str = "and") -> str:
    """``A``, ``A and B``, ``A, B and C``."""
    if len(items) < 2:
        return "".join(items)
    return f"{', '.join(items[:-1])} {conjunction} {items[-1]}"


@dataclass(frozen=True, slots=True)
class Caller:
    """Who asked for a name, so a refusal can say what did not happen and how to ask again.

    Attributes:
        undone: What the refused call did not do, as a clause (``"nothing ran"``).
        channel_arg: The argument that takes a name (``"channel"``), or None when the name
            came from a ``>>`` line rather than a call.
        server_arg: The argument that takes a server id, or None when the call has none.
    """

    undone: str
    channel_arg: str | None = "channel"
    server_arg: str | None = "server_id"

    def using(self, name: str) -> str:
        """The next step that uses ``name``: ``call again with channel "x"``."""
        if self.channel_arg is None:
            return f"write >>{name} instead"
        return f"call again with {self.channel_arg} {q(name)}"

    def using_one(self) -> str:
        """The next step that uses one of several listed names."""
        if self.channel_arg is None:
            return "write >> followed by one of them instead"
        return f"call again with {self.channel_arg} set to one of them"

    def using_pair(self, ref: ChannelRef) -> str | None:
        """The next step that names ``ref`` by id and server id, or None when impossible."""
        if self.channel_arg is None or self.server_arg is None:
            return None
        return (
            f"call again with {self.channel_arg} {q(ref.channel_id)} and "
            f"{self.server_arg} {q(ref.server_id)}"
        )


LOOKUP = Caller("no channel was chosen")
"""A plain lookup: ``ChannelRegistry.resolve`` (arguments ``channel`` and ``server_id``)."""
RUN = Caller("nothing ran", "channel_id", "server_id")
"""The lifecycle calls: open, close, decline (§3.7)."""
POST = Caller("nothing was posted", "channel_id", None)
"""A publish that takes no server id (§3.8)."""
DELIVER = Caller("nothing was delivered", "channel_id", None)
"""deliver_summary and similar deliveries."""
SPEECH = Caller("nothing was sent", None, None)
"""A ``>>`` target in an agent's speech (§4.5)."""


@dataclass(frozen=True, slots=True)
class Choice:
    """One candidate of a refused name, and how it can be picked.

    Attributes:
        ref: The channel.
        name: A string that picks this channel alone, or None when none does.
        label: The channel's label, shown beside the name when the label is what matched.
        gone: The channel is one of the turn's own but its server no longer registers it.
    """

    ref: ChannelRef
    name: str | None
    label: str | None = None
    gone: bool = False


_MATCHES = {
    Tier.NAME: "is the id or server-qualified name of",
    Tier.RAW_ID: "is the platform's raw id of",
    Tier.LABEL: "is the label of",
    Tier.BARE_LABEL: "is the label, without its server suffix, of",
    Tier.DM_MENTION: "mentions the recipient of",
    Tier.DM_NAME: "is the recipient name of",
    Tier.DM_PARTIAL: "partly matches the recipient names of",
    Tier.OWN: "is the id of this turn's own channels,",
}


def _shown(choice: Choice) -> str:
    if choice.name is None:
        return on_server(choice.ref)
    if choice.label and choice.label != choice.name:
        return f"{q(choice.name)} (labelled {q(choice.label)})"
    return q(choice.name)


def _line(choice: Choice, caller: Caller) -> str:
    where = on_server(choice.ref)
    if choice.label:
        where += f" (labelled {q(choice.label)})"
    if choice.gone:
        return f"- {where}: its server no longer registers it, so nothing can reach it now."
    if choice.name is not None:
        return f"- {where}: {caller.using(choice.name)}."
    pair = caller.using_pair(choice.ref)
    if pair is not None:
        return f"- {where}: no name picks it alone; {pair}."
    return f"- {where}: no name picks it alone, so this call cannot reach it."


def ambiguous_text(
    name: str,
    choices: Sequence[Choice],
    tier: Tier,
    caller: Caller,
    *,
    server_id: str | None = None,
    more: bool = False,
) -> str:
    """The refusal of a name that several channels answer to (§3.4, §3.6, §4.6)."""
    servers = list(dict.fromkeys(c.ref.server_id for c in choices))
    where = f"server {q(servers[0])}" if len(servers) == 1 else f"{len(servers)} servers"
    count = f"{len(choices)}{' or more' if more else ''} channels"
    if server_id is not None:
        where = f"server {q(server_id)}"
    head = f"{q(name)} {_MATCHES[tier]} {count} on {where}"
    if any(c.name is None for c in choices):
        lines = "\n".join(_line(c, caller) for c in choices)
        return f"{head}, so {caller.undone}. Each of them:\n{lines}"
    listed = ", ".join(_shown(c) for c in choices)
    text = f"{head} ({listed}), so {caller.undone}. To pick one, {caller.using_one()}"
    shared_id = all(c.ref.channel_id == name for c in choices)
    if caller.server_arg and server_id is None and shared_id and len(servers) == len(choices):
        quoted = and_list([q(s) for s in servers], "or")
        text += f", or keep {q(name)} and set {caller.server_arg} to {quoted}"
    return text + "."


NAME_KINDS = "an id, server-qualified name, raw id, label or @name"
"""What the general resolver accepts, as refusals say it."""


def unknown_text(
    name: str,
    caller: Caller,
    suggestions: Sequence[str] = (),
    *,
    kinds: str = NAME_KINDS,
    after: str = "",
) -> str:
    """The refusal of a name no channel answers to; ``after`` explains further."""
    if not name:
        return (
            f"The channel name is empty, so {caller.undone}. Name a channel by {kinds}; "
            "the channel list shows them."
        )
    text = f"No channel answers to {q(name)} as {kinds}, so {caller.undone}."
    if after:
        text += f" {after}"
    if suggestions:
        listed = ", ".join(q(s) for s in suggestions)
        text += f" Close names, each picking one channel: {listed}."
    elif not after:
        text += " The channel list shows every channel and the name that picks it."
    return text


def own_gone_text(name: str, ref: ChannelRef, caller: Caller) -> str:
    """The refusal of a name bound to the turn's own channel whose server withdrew it."""
    return (
        f"{q(name)} is this turn's own channel on server {q(ref.server_id)}, which no longer "
        f"registers it, so {caller.undone}. The name stays bound to that channel for this "
        "turn and reaches no other; it works again once that server registers it again."
    )


def not_on_server_text(name: str, server_id: str, caller: Caller, elsewhere: str) -> str:
    """The refusal of a name given with a server id that has no such channel (§3.7 step 2)."""
    return f"Server {q(server_id)} has no channel {q(name)}, so {caller.undone}. {elsewhere}"


def elsewhere_text(
    name: str,
    elsewhere: Sequence[Choice],
    alone: ChannelRef | None,
    caller: Caller,
) -> str:
    """Where a channel id given with the wrong server id is, and how to reach it (§3.5).

    Args:
        name: The channel id as given.
        elsewhere: The channels on other servers whose id is ``name``, each with the string
            that picks it alone (or None).
        alone: The one channel ``name`` picks without a server id, if there is exactly one.
        caller: The call that was refused.
    """
    arg = caller.server_arg
    if not elsewhere:
        if alone is None:
            return "The channel list shows the channels and their servers."
        text = f"{q(name)} alone names channel {on_server(alone)}"
        return f"{text}: for that one, call again without {arg}." if arg else f"{text}."
    servers = list(dict.fromkeys(c.ref.server_id for c in elsewhere))
    if arg is None:
        places = [
            f"on server {q(c.ref.server_id)} as {q(c.name)}"
            if c.name is not None
            else f"on server {q(c.ref.server_id)} (where no name picks it alone)"
            for c in elsewhere
        ]
        return f"A channel with that id is {and_list(places)}."
    if len(servers) == 1:
        text = f"It is on server {q(servers[0])}: call again with {arg} {q(servers[0])}"
        return text + (f", or leave {arg} out." if alone is not None else ".")
    listed = and_list([q(s) for s in servers])
    return f"It is on servers {listed}: call again with {arg} set to one of them."


def no_dm_text(name: str, mention: str | None) -> str:
    """Why an ``@name`` or ``<@id>`` matched no DM channel (added to an unknown-name text)."""
    if mention is not None:
        return f"No registered DM channel has the recipient id {q(mention)}."
    return (
        "No registered DM channel has that recipient, and a person without one cannot be "
        "reached by name here."
    )


def inbound_only_text(shown: str, ref: ChannelRef, caller: Caller) -> str:
    """The refusal of speech into a channel its server declared inbound-only."""
    return (
        f"{shown} is inbound-only: server {q(ref.server_id)} declared it for reading, so "
        f"{caller.undone} and nothing can be sent there. Reading it is still allowed."
    )


def empty_server_text(caller: Caller) -> str:
    """The refusal of an empty server id given beside a name (§3.8)."""
    arg = caller.server_arg or "server_id"
    return (
        f"The {arg} given is empty, so {caller.undone}. Name a server, or leave {arg} out "
        "to look the channel up by its id alone."
    )
