"""Properties of naming, against a brute-force reading of the rules.

After random registrations and removals, and with a random set of the turn's own channels:

- every name Switchboard shows for a channel resolves back to that channel (the general
  resolver, the tool resolver, and ``>>`` targets for the shown token); a channel shown by the
  display form has no picking name and is reached by its id with its server id;
- a name shown for a channel that is *not* registered never resolves to any channel;
- resolution never picks one of several candidates: it returns the only hit of the deciding
  tier (computed here by scanning every channel), or refuses with exactly those candidates;
- every candidate name and every suggestion in a refusal picks its channel alone.
"""

from __future__ import annotations

import contextlib
import re
from dataclasses import dataclass, replace

from hypothesis import given, settings
from hypothesis import strategies as st

from switchboard.channels import ChannelRef, ChannelRegistry, qualified_name
from switchboard.channels.descriptor import DescriptorLike
from switchboard.channels.names.errors import (
    AmbiguousName,
    ChannelNameError,
    OwnChannelGone,
    UnknownName,
)
from switchboard.channels.names.wording import on_server
from switchboard.channels.prose.grammar import is_prose_target_token
from switchboard.channels.records import ChannelEntry
from tests.channels.channels_support import Desc

SERVERS = ["a", "b", "a:b", "s", "z"]
IDS = ["room", "b:room", "s:room", "general", "skip_reply", "a:b:room", "g 1", "x"]
LABELS = ["", "#General", "general", "#room (A)", "room", "#x (y)", "team room", "@ann", "#"]
RAWS = [None, "1", "room"]
DM_NAMES = [None, "annabel", "@Hannah", "bo", "general"]
DM_IDS = [None, "42", 7]
REFS = [ChannelRef(s, c) for s in SERVERS for c in IDS]


def make(cid: str, label: str, raw: str | None, dm: str | None, rid: object, inb: bool) -> Desc:
    metadata: dict[str, object] | None = None
    if dm is not None or rid is not None:
        metadata = {"channelType": "dm"}
        if dm is not None:
            metadata["recipientName"] = dm
        if rid is not None:
            metadata["recipientId"] = rid
    address = None if raw is None else {"channelId": raw}
    direction = "inbound" if inb else "bidirectional"
    return Desc(cid, label=label, direction=direction, address=address, metadata=metadata)


descriptors = st.builds(
    make,
    st.sampled_from(IDS),
    st.sampled_from(LABELS),
    st.sampled_from(RAWS),
    st.sampled_from(DM_NAMES),
    st.sampled_from(DM_IDS),
    st.booleans(),
)


@dataclass(frozen=True)
class Register:
    server: str
    item: Desc


@dataclass(frozen=True)
class Remove:
    ref: ChannelRef


@dataclass(frozen=True)
class Probe:
    name: str  # a lookup in the middle, so the partial-DM table is built and then kept up


ops = st.lists(
    st.one_of(
        st.builds(Register, st.sampled_from(SERVERS), descriptors),
        st.builds(Register, st.sampled_from(SERVERS), descriptors),
        st.builds(
            Register, st.sampled_from(SERVERS), descriptors.map(lambda d: replace(d, id="general"))
        ),
        st.builds(Remove, st.sampled_from(REFS)),
        st.builds(Probe, st.sampled_from(["@an", "@bo", "@nnab", "@general"])),
    ),
    max_size=14,
)
# The turn's own channels: refs that share an id on several servers, registered or not, so
# own bindings of one, of several, and of withdrawn channels all come up often.
OWN_REFS = [ChannelRef(s, c) for s in SERVERS for c in ("general", "room", "b:room")]
owns = st.frozensets(st.sampled_from(OWN_REFS), max_size=3)


def build(sequence: list[Register | Remove | Probe]) -> ChannelRegistry:
    reg = ChannelRegistry()
    for op in sequence:
        if isinstance(op, Register):
            reg.register(op.server, [op.item])
        elif isinstance(op, Remove):
            reg.change(op.ref.server_id, removed=[op.ref.channel_id])
        else:
            with contextlib.suppress(ChannelNameError):
                reg.resolve(op.name)
    return reg


# -- the brute-force reading of the rules -------------------------------------------------


def norm(label: str) -> str:
    return (label[1:] if label.startswith("#") else label).casefold()


def bare(label: str) -> str | None:
    found = re.fullmatch(r"(.*?) *\(([^()]*)\)", norm(label))
    return found.group(1) if found and found.group(1).strip() else None


def dm_name(d: DescriptorLike) -> str | None:
    meta = d.metadata or {}
    if meta.get("channelType") != "dm":
        return None
    name = meta.get("recipientName")
    if not isinstance(name, str) or not name:
        name = d.label[4:] if d.label.lower().startswith("dm: ") else d.label
    return name.removeprefix("@").casefold() or None


def dm_id(d: DescriptorLike) -> str | None:
    meta = d.metadata or {}
    rid = meta.get("recipientId")
    return None if meta.get("channelType") != "dm" or rid is None else str(rid)


def tier_hits(entries: list[ChannelEntry], name: str) -> set[ChannelRef]:
    """The hits of the first tier with any, by scanning every entry."""

    def where(test: object) -> set[ChannelRef]:
        assert callable(test)
        return {e.ref for e in entries if test(e.ref, e.descriptor)}

    if not name:
        return set()

    def raw(d: DescriptorLike) -> str | None:
        return str(d.address["channelId"]) if d.address else None

    tiers = [
        where(lambda r, _d: name in (r.channel_id, qualified_name(r))),
        where(lambda _r, d: raw(d) == name),
        where(lambda _r, d: bool(d.label) and norm(d.label) == norm(name) != ""),
        where(lambda _r, d: bool(d.label) and bare(d.label) == norm(name)),
    ]
    mention = re.fullmatch(r"<@!?([^>]+)>", name)
    if mention and mention.group(1) != "!":
        tiers.append(where(lambda _r, d: dm_id(d) == mention.group(1).removeprefix("!")))
    elif name.startswith("@") and len(name) > 1:
        key = name[1:].casefold()
        tiers.append(where(lambda _r, d: dm_name(d) == key))
        tiers.append(
            where(
                lambda _r, d: (
                    (n := dm_name(d)) is not None
                    and len(n) >= 3
                    and (key in n or key.startswith(n))
                )
            )
        )
    return next((t for t in tiers if t), set())


def queries(entries: list[ChannelEntry]) -> set[str]:
    found = set(IDS) | {qualified_name(r) for r in REFS} | set(LABELS) | {"1", "<@42>", "<@!7>"}
    for e in entries:
        d = e.descriptor
        found.update({d.label.upper(), "#" + d.label, norm(d.label), bare(d.label) or ""})
        n = dm_name(d)
        if n:
            found.update("@" + n[i:j] for i in range(len(n)) for j in range(i + 1, len(n) + 1))
            found.add("@" + n + "x")
    return found


# -- the properties -------------------------------------------------------------------------


def resolves_to(reg: ChannelRegistry, name: str, own: frozenset[ChannelRef]) -> ChannelRef | None:
    try:
        return reg.resolve(name, own=own).ref
    except ChannelNameError:
        return None


@settings(max_examples=200, deadline=None)
@given(ops, owns)
def test_every_shown_name_resolves_back_to_its_channel(
    sequence: list[Register | Remove | Probe], own: frozenset[ChannelRef]
) -> None:
    reg = build(sequence)
    names = reg.names
    for entry in list(reg.entries()):
        ref = entry.ref
        shown = names.name_shown(ref, own)
        if shown == on_server(ref):
            assert names.name_for(ref, own) is None
            assert reg.resolve(ref.channel_id, server_id=ref.server_id).ref == ref
        else:
            assert reg.resolve(shown, own=own).ref == ref
            assert names.resolve_tool_channel(shown, own=own).ref == ref
        token = names.prose_target_for(ref, own)
        if token is not None:
            assert is_prose_target_token(token)
            assert names.resolve_prose_target(token, for_speech=True, own=own).ref == ref
        elif entry.descriptor.direction != "inbound" and is_prose_target_token(qualified_name(ref)):
            # A picking name that is a valid token always round-trips, so there is none.
            assert names.name_for(ref, own) is None


@settings(max_examples=200, deadline=None)
@given(ops, owns)
def test_a_gone_channels_shown_name_reaches_no_channel(
    sequence: list[Register | Remove | Probe], own: frozenset[ChannelRef]
) -> None:
    reg = build(sequence)
    for ref in REFS:
        if reg.get(ref) is not None:
            continue
        shown = reg.names.name_shown(ref, own)
        if shown != on_server(ref):
            assert resolves_to(reg, shown, own) is None, shown


@settings(max_examples=200, deadline=None)
@given(ops, owns)
def test_resolution_returns_the_only_hit_of_the_deciding_tier_or_refuses_with_all_of_them(
    sequence: list[Register | Remove | Probe], own: frozenset[ChannelRef]
) -> None:
    reg = build(sequence)
    entries = list(reg.entries())
    for name in queries(entries):
        bound = {r for r in own if r.channel_id == name}
        check_one(reg, name, own, bound or tier_hits(entries, name), bound)


def check_one(
    reg: ChannelRegistry,
    name: str,
    own: frozenset[ChannelRef],
    expected: set[ChannelRef],
    bound: set[ChannelRef],
) -> None:
    """``reg.resolve(name, own=own)`` agrees with the brute-force ``expected`` hits."""
    outcome: object
    try:
        outcome = reg.resolve(name, own=own).ref
    except ChannelNameError as error:
        outcome = error
    if isinstance(outcome, AmbiguousName):
        candidates = set(outcome.candidates)
        assert len(expected) > 1, name
        assert len(candidates) == len(outcome.candidates)
        assert candidates == expected or (outcome.more and candidates < expected)
        for ref, alone in zip(outcome.candidates, outcome.names, strict=True):
            if alone is not None:
                assert resolves_to(reg, alone, own) == ref, (name, alone)
    elif isinstance(outcome, OwnChannelGone):
        assert bound == {outcome.ref}
        assert reg.get(outcome.ref) is None
    elif isinstance(outcome, UnknownName):
        assert not expected, name
        for suggestion in outcome.suggestions:
            assert resolves_to(reg, suggestion, own) is not None, suggestion
    else:
        assert expected == {outcome}, name
