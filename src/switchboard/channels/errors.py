"""Why a typed name did not pick exactly one channel.

What this module knows: the two refusals of name resolution and the words that tell the caller
what to do next. The hierarchy::

    ChannelNameError          a name did not pick exactly one channel; nothing was chosen
    ├── AmbiguousName         several channels answer to it (never resolved by a guess)
    └── UnknownName           no registered channel answers to it

What it deliberately does not know: how the candidates or suggestions were found. The resolver
computes, for each candidate, the name that picks it alone (or None when only a server id
together with the channel id reaches it) and passes them in.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from switchboard.channels.ref import ChannelRef, qualified_name

__all__ = ["AmbiguousName", "ChannelNameError", "UnknownName"]


def _q(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)


class ChannelNameError(Exception):
    """A name did not pick exactly one channel, so nothing was chosen.

    Attributes:
        name: The name exactly as given.
    """

    def __init__(self, name: str, message: str) -> None:
        super().__init__(message)
        self.name = name


class AmbiguousName(ChannelNameError):
    """Several registered channels answer to one name.

    Attributes:
        name: The name exactly as given.
        candidates: Every channel the name answers to, in lookup order.
        names: For each candidate, the name that picks it alone, or None when it needs the
            channel id together with its server id.
        server_id: The server the lookup was restricted to, if any.
    """

    def __init__(
        self,
        name: str,
        candidates: tuple[ChannelRef, ...],
        *,
        names: Sequence[str | None] | None = None,
        server_id: str | None = None,
    ) -> None:
        self.candidates = candidates
        self.names: tuple[str | None, ...] = (
            tuple(names) if names is not None else tuple(qualified_name(r) for r in candidates)
        )
        self.server_id = server_id
        super().__init__(name, self._message(name))

    def _message(self, name: str) -> str:
        parts: list[str] = []
        for ref, alone in zip(self.candidates, self.names, strict=True):
            if alone is not None:
                parts.append(_q(alone))
            else:
                parts.append(
                    f"channel {_q(ref.channel_id)} on server {_q(ref.server_id)} "
                    "(only reachable with that channel id and server_id)"
                )
        servers = list(dict.fromkeys(ref.server_id for ref in self.candidates))
        if len(servers) == 1:
            where = f" on server {_q(servers[0])}"
        else:
            where = f" on servers {', '.join(_q(s) for s in servers)}"
        text = (
            f"Channel name {_q(name)} matches {len(self.candidates)} channels{where} "
            f"({', '.join(parts)}), so none was chosen. Use one of these names instead"
        )
        if (
            self.server_id is None
            and len(servers) == len(self.candidates)
            and all(ref.channel_id == name for ref in self.candidates)
        ):
            text += f", or pass server_id ({' or '.join(_q(s) for s in servers)})"
        return text + "."


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
        suggestions: tuple[str, ...] = (),
        *,
        server_id: str | None = None,
    ) -> None:
        self.suggestions = suggestions
        self.server_id = server_id
        if server_id is None:
            text = f"No registered channel answers to {_q(name)}."
        else:
            text = f"Server {_q(server_id)} has no channel with id or raw id {_q(name)}."
        listed = ", ".join(_q(s) for s in suggestions)
        if suggestions and server_id is not None:
            text += f" Without server_id, these names each pick one channel: {listed}."
        elif suggestions:
            text += f" Did you mean {listed}? Each of these picks one channel."
        elif server_id is not None:
            text += " Leave server_id out to look the name up on every server."
        else:
            text += " List the channels to see their names."
        super().__init__(name, text)
