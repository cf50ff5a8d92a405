"""A fast acceptance check for the hot ``channels/register`` path.

Why: validating every descriptor with pydantic costs about 3 µs each, which alone puts a
registration of 100,000 channels past its budget. :func:`fast_descriptors` accepts descriptors
of the common shape as :class:`FastDescriptor` tuples (the model's attributes and wire dump)
and leaves every other item to the model, which words every refusal; a property test holds the
two to the same verdicts.
"""

from __future__ import annotations

from typing import Annotated, Any, Final, Literal

import msgspec

__all__ = [
    "FastDescriptor",
    "RegisterFastParams",
    "fast_descriptors",
    "read_register_params",
    "register_channels",
]


class FastDescriptor(
    msgspec.Struct,
    frozen=True,
    gc=False,
    forbid_unknown_fields=True,
    rename={"initially_open": "initiallyOpen"},
):
    """A channel descriptor (§14.2) that passed :func:`fast_descriptors`: the attributes of
    :class:`~switchboard.protocol.channel_messages.ChannelDescriptor`.

    Treat the ``address``, ``metadata`` and ``capabilities`` objects as read-only.
    """

    id: Annotated[str, msgspec.Meta(min_length=1)]
    type: str
    label: str
    direction: Literal["inbound", "outbound", "bidirectional"]
    address: dict[str, Any] | None = None
    metadata: dict[str, Any] | None = None
    initially_open: bool | None = None
    capabilities: dict[str, Any] | None = None

    def model_dump(self, *, by_alias: bool = True, exclude_none: bool = True) -> dict[str, Any]:
        """The wire form, as ``ChannelDescriptor.model_dump(by_alias=True,
        exclude_none=True)`` gives it (only those arguments are supported)."""
        if not by_alias or not exclude_none:
            raise ValueError("a FastDescriptor dumps only by alias and without None members")
        wire: dict[str, Any] = {
            "id": self.id,
            "type": self.type,
            "label": self.label,
            "direction": self.direction,
        }
        if self.address is not None:
            wire["address"] = self.address
        if self.metadata is not None:
            wire["metadata"] = self.metadata
        if self.initially_open is not None:
            wire["initiallyOpen"] = self.initially_open
        if self.capabilities is not None:
            wire["capabilities"] = self.capabilities
        return wire


_BATCH = list[FastDescriptor]


def fast_descriptors(items: list[Any]) -> tuple[list[FastDescriptor | None], list[int]]:
    """Check every item for the common descriptor shape.

    Validating every descriptor with pydantic builds a model, its ``__dict__`` and its fields-set
    per item (about 3 µs each on a small machine), which alone puts a registration of 100,000
    channels past its 0.3 s budget. :func:`fast_descriptors` checks the common shape of a descriptor
    with ``msgspec.convert`` against :class:`FastDescriptor`, a frozen ``msgspec.Struct`` built in
    C: a batch whose every item fits is converted in one call, otherwise each item is tried alone.
    An item that does not fit is left to the
    :class:`~switchboard.protocol.channel_messages.ChannelDescriptor` model, which also gives the
    reason when an item is refused.

    What fits: exactly the members §14.2 defines (an extra member or a snake_case alias is left to
    the model, which keeps extras), each with exactly the type the model accepts without coercion:
    ``id`` a non-empty string; ``type`` and ``label`` strings; ``direction`` one of the three
    directions; ``address``, ``metadata`` and ``capabilities`` objects with string keys (a shallow
    copy is kept), or null; ``initiallyOpen`` a boolean or null. A property test holds it to the
    model: it accepts only what the model accepts, with the same attribute values and the same wire
    dump.

    A :class:`FastDescriptor` is not tracked by the cyclic collector (``gc=False``): it holds
    strings and JSON objects that cannot refer back to it, so it is never part of a cycle, and a
    registry of 100,000 of them adds nothing to what a collection walks (the named tuples this
    replaced were two allocations each and all of them tracked).

    This is our own code rather than a library because it is a shortcut in front of one: the model
    stays the single definition of what is valid.

    A batch whose every item fits is converted with one C call; any other batch item by item.

    Returns:
        One entry per item: a :class:`FastDescriptor`, or None for an item the model must
        judge; and the indices of the None entries, in order.
    """
    try:
        return msgspec.convert(items, _BATCH), []
    except (msgspec.ValidationError, RecursionError):
        return _one_by_one(items)


def _one_by_one(items: list[Any]) -> tuple[list[FastDescriptor | None], list[int]]:
    out: list[FastDescriptor | None] = []
    odd: list[int] = []
    convert, cls = msgspec.convert, FastDescriptor
    invalid = (msgspec.ValidationError, RecursionError)
    for n, item in enumerate(items):
        try:
            out.append(convert(item, cls))
        except invalid:
            odd.append(n)
            out.append(None)
    return out, odd


class RegisterFastParams(msgspec.Struct):
    """``channels/register`` params whose every descriptor has the common shape: the shape the
    transport decodes a request's params into, in the same pass as its envelope (see
    :func:`register_channels`)."""

    channels: list[FastDescriptor]


_read_register: Final = msgspec.json.Decoder(RegisterFastParams).decode


def read_register_params(params: bytes | msgspec.Raw) -> dict[str, Any] | None:
    """The params of a ``channels/register`` request read straight from their JSON bytes into
    :class:`FastDescriptor` values, as ``{"channels": [...]}``, or None unless every
    descriptor has the common shape (the caller then reads the frame the general way, and
    :func:`fast_descriptors` and the model judge each item).

    Decoding from the bytes skips building a dict per descriptor only to convert it: about
    80 ms of a 100,000-channel registration. :func:`fast_descriptors`
    hands these values back as they are. The bytes must be valid UTF-8 (the caller checks).
    """
    try:
        return register_channels(_read_register(params))
    except (msgspec.DecodeError, RecursionError):
        return None


def register_channels(params: RegisterFastParams) -> dict[str, Any]:
    """The params for the host from :class:`RegisterFastParams` the transport decoded
    (``transport.ParamsReader(RegisterFastParams, register_channels)``)."""
    return {"channels": params.channels}
