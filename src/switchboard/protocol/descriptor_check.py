"""A fast acceptance check for the hot ``channels/register`` path.

Validating every descriptor with pydantic builds a model, its ``__dict__`` and its fields-set
per item (about 3 µs each on a small machine), which alone puts a registration of 100,000
channels past its 0.3 s budget (issue #14). :func:`fast_descriptors` checks the common shape
of a descriptor (only the members §14.2 defines, each with exactly the type the
:class:`~switchboard.protocol.channel_messages.ChannelDescriptor` model accepts without
coercion) and turns it into a :class:`FastDescriptor`, a named tuple built in one C call.
Every other item (an extra member, a snake_case alias, a value the model would coerce or
refuse) is left to the model, which also gives the reason when an item is refused. A property
test holds the fast path to the model: it accepts only what the model accepts, with the same
attribute values and the same wire dump.

This is our own code rather than a library because it is a shortcut in front of one: the
model stays the single definition of what is valid.
"""

from __future__ import annotations

from functools import partial
from itertools import chain, repeat
from operator import add, itemgetter
from typing import Any, NamedTuple

__all__ = ["FastDescriptor", "fast_descriptors"]


class FastDescriptor(NamedTuple):
    """A channel descriptor (§14.2) that passed :func:`fast_descriptors`: the attributes of
    :class:`~switchboard.protocol.channel_messages.ChannelDescriptor`, and the item as sent.

    Like the model it stands for, it holds the ``address``, ``metadata`` and ``capabilities``
    objects as sent (no copies); treat them as read-only.
    """

    id: str
    type: str
    label: str
    direction: str
    address: dict[str, Any] | None
    metadata: dict[str, Any] | None
    initially_open: bool | None
    capabilities: dict[str, Any] | None
    wire: dict[str, Any]

    def model_dump(self, *, by_alias: bool = True, exclude_none: bool = True) -> dict[str, Any]:
        """The wire form, as ``ChannelDescriptor.model_dump(by_alias=True,
        exclude_none=True)`` gives it (only those arguments are supported)."""
        if not by_alias or not exclude_none:
            raise ValueError("a FastDescriptor dumps only by alias and without None members")
        return {k: v for k, v in self.wire.items() if v is not None}


_KEYS = frozenset(
    ("id", "type", "label", "direction", "address", "metadata", "initiallyOpen", "capabilities")
)
_DIRECTIONS = frozenset(("inbound", "outbound", "bidirectional"))


_REQUIRED = itemgetter("id", "type", "label", "direction")
_NEW = partial(tuple.__new__, FastDescriptor)
_ID = itemgetter(0)
_DIRECTION = itemgetter(3)


def fast_descriptors(items: list[Any]) -> tuple[list[FastDescriptor | None], list[int]]:
    """Check every item for the common descriptor shape.

    A batch whose every item has just the four required members, all strings, is checked
    and built with C-level passes over the whole list; any other batch item by item.

    Returns:
        One entry per item: a :class:`FastDescriptor`, or None for an item the model must
        judge; and the indices of the None entries, in order.
    """
    uniform = _uniform(items)
    if uniform is not None:
        return uniform, []
    return _one_by_one(items)


def _uniform(items: list[Any]) -> list[FastDescriptor | None] | None:
    """The descriptors of a batch of items that are all ``{id, type, label, direction}``
    with string values (a non-empty id, a known direction); None for any other batch."""
    if not items or set(map(type, items)) != {dict} or set(map(len, items)) != {4}:
        return None
    try:
        required = list(map(_REQUIRED, items))  # four members, all of them required
    except KeyError:
        return None
    if set(map(type, chain.from_iterable(required))) != {str}:
        return None
    if "" in map(_ID, required) or not set(map(_DIRECTION, required)) <= _DIRECTIONS:
        return None
    rest = zip(repeat(None), repeat(None), repeat(None), repeat(None), items)
    return list(map(_NEW, map(add, required, rest)))


def _one_by_one(items: list[Any]) -> tuple[list[FastDescriptor | None], list[int]]:
    out: list[FastDescriptor | None] = []
    odd: list[int] = []
    add = out.append
    make = tuple.__new__
    cls = FastDescriptor
    keys = _KEYS
    directions = _DIRECTIONS
    for d in items:
        if type(d) is dict and d.keys() <= keys:
            get = d.get
            cid = get("id")
            kind = get("type")
            label = get("label")
            direction = get("direction")
            if (
                type(cid) is str
                and cid
                and type(kind) is str
                and type(label) is str
                and type(direction) is str
                and direction in directions
            ):
                if len(d) == 4:  # the four required members and nothing else
                    add(make(cls, (cid, kind, label, direction, None, None, None, None, d)))
                    continue
                address = get("address")
                metadata = get("metadata")
                opens = get("initiallyOpen")
                caps = get("capabilities")
                if (
                    (address is None or type(address) is dict)
                    and (metadata is None or type(metadata) is dict)
                    and (opens is None or opens is True or opens is False)
                    and (caps is None or type(caps) is dict)
                ):
                    add(make(cls, (cid, kind, label, direction, address, metadata, opens, caps, d)))
                    continue
        odd.append(len(out))
        add(None)
    return out, odd
