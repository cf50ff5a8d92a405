"""What the registry reads from a channel descriptor, and the lookup keys derived from it.

:class:`DescriptorLike` is the read-only shape of an MCPL ``ChannelDescriptor`` the registry
relies on (structural, so both the pydantic model and the fast path's tuples fit);
:class:`CheckedDescriptors` is a batch the host vouches for; the key functions normalize labels,
raw ids and DM names the one way every index and lookup uses.

What it deliberately does not know: which descriptors are registered, and the order in which
names are tried.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Protocol

__all__ = [
    "CheckedDescriptors",
    "DescriptorLike",
    "Rejected",
    "bare_label_key",
    "dm_keys",
    "dm_query",
    "label_key",
    "raw_channel_id",
]


class DescriptorLike(Protocol):
    """The attributes of a channel descriptor that the registry reads (MCPL §14.2).

    What it knows:

    - :class:`DescriptorLike`, the read-only shape of an MCPL ``ChannelDescriptor`` (§14.2) that the
      registry relies on. It is a structural type, so the registry works with the protocol package's
      models, with frozen dataclasses in tests, or with any object that has these attributes.
    - :class:`Rejected`, an item the host already found malformed before the registry saw it.
    - How each lookup key is normalized: the raw address id, the label (case-insensitive, one
      leading ``#`` ignored), that key without its trailing ``" (Server Name)"`` parenthetical, and
      the DM keys (recipient name, one leading ``@`` ignored, case-insensitive; recipient id as a
      ``<@id>`` or ``<@!id>`` mention). A stored key and a typed query go through the same function,
      so they always agree.

    DM classification uses the explicit ``metadata.channelType == "dm"`` only (channel-registry.md
    §14, idea (b)); the older id and label heuristics are left to the durable, read-only resolver.

    Every member is read-only here; the registry never writes to a descriptor.
    """

    @property
    def id(self) -> str:
        """The channel id, unique within the registering connection."""
        ...

    @property
    def type(self) -> str:
        """The platform, such as ``"discord"``."""
        ...

    @property
    def label(self) -> str:
        """The human label, such as ``"#general (Acme)"``; may be empty or missing."""
        ...

    @property
    def direction(self) -> str:
        """``"inbound"``, ``"outbound"`` or ``"bidirectional"``."""
        ...

    @property
    def address(self) -> Mapping[str, object] | None:
        """The platform address; ``address["channelId"]`` is the raw server-internal id."""
        ...

    @property
    def metadata(self) -> Mapping[str, object] | None:
        """Free-form hints; a DM has ``channelType == "dm"``, ``recipientName``/``recipientId``."""
        ...

    @property
    def initially_open(self) -> bool | None:
        """The server's bootstrap preference (``initiallyOpen`` on the wire)."""
        ...


@dataclass(frozen=True, slots=True)
class Rejected:
    """An item the host found malformed before registration, with the reason to report.

    Attributes:
        id: The item's id as far as the host could read it, or None when it had none.
        reason: The reason its itemized result carries (``"invalid descriptor: missing id"``).
    """

    id: str | None
    reason: str


class CheckedDescriptors(list[DescriptorLike]):
    """Descriptors whose caller vouches that each has a non-empty ``str`` id and a ``str``
    label, and that none is a :class:`Rejected`: the host's reading of a batch whose every item
    took the common shape (``protocol.fast_descriptors``, which checks exactly that).

    A large registration then skips the registry's own pass over each item's type, id and
    label type (four passes over 100,000 items cost a twentieth of the registration, most of
    it in touching each object). Anything else is checked as before.
    """

    __slots__ = ()


def raw_channel_id(address: Mapping[str, object] | None) -> str | None:
    """Return ``address["channelId"]`` as a string, or None when there is no usable one.

    A string is kept as the very same object (no copy, so indexing it costs no memory); an
    integer (a snowflake sent as a number) becomes its decimal string; anything else, and an
    empty string, count as absent.
    """
    if not address:
        return None
    raw = address.get("channelId")
    if type(raw) is str:
        return raw or None
    if type(raw) is int:
        return str(raw)
    return None


def label_key(label: str) -> str:
    """Normalize a label, or a typed label query: drop one leading ``#``, then case-fold."""
    if label[:1] == "#":
        label = label[1:]
    folded = label.casefold()
    # Reuse the given object when folding changed nothing: the index then holds no copy.
    return label if folded == label else folded


def bare_label_key(key: str) -> str | None:
    """Return a normalized label key without its trailing ``" (…)"`` parenthetical, or None.

    ``label_key("#fable (antra's server)")`` is ``"fable (antra's server)"``, whose bare key is
    ``"fable"``. None means there is no such suffix, or nothing but spaces would remain, so
    there is no second key to index. A suffix with nested parentheses is not stripped.
    """
    if not key.endswith(")"):
        return None
    cut = key.rfind(" (")
    if cut <= 0 or key.find(")", cut + 2, -1) >= 0:
        return None
    bare = key[:cut]
    if bare[-1] == " ":  # "x  (y)": drop the extra spaces too
        bare = bare.rstrip()
    return bare or None


def _name_key(name: str) -> str:
    """Normalize a DM recipient name: drop one leading ``@``, then case-fold."""
    if name[:1] == "@":
        name = name[1:]
    return name.casefold()


def dm_keys(
    label: str | None, metadata: Mapping[str, object] | None
) -> tuple[str | None, str | None] | None:
    """Return ``(name_key, id_key)`` for a DM channel, or None when it is not a DM.

    The name key comes from ``recipientName``; without one, from the label with a leading
    ``"DM: "`` removed. The id key is ``recipientId`` as a string. Either may be None.
    """
    if not metadata or metadata.get("channelType") != "dm":
        return None
    name = metadata.get("recipientName")
    name_key: str | None = None
    if type(name) is str and name:
        name_key = _name_key(name)
    elif label:
        rest = label[4:] if label[:4].casefold() == "dm: " else label
        name_key = _name_key(rest) or None
    rid = metadata.get("recipientId")
    id_key: str | None = None
    if (type(rid) is str and rid) or type(rid) is int:
        id_key = str(rid)
    return name_key or None, id_key


def dm_query(name: str) -> tuple[bool, str]:
    """Classify a typed DM name: ``(True, id)`` for a ``<@id>``/``<@!id>`` mention, else
    ``(False, name_key)`` for ``@name`` or ``name``."""
    if name[:2] == "<@" and name[-1:] == ">":
        inner = name[2:-1]
        if inner[:1] == "!":
            inner = inner[1:]
        if inner:
            return True, inner
    return False, _name_key(name)
