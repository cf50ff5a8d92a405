"""Property tests: random register/change/remove sequences against a brute-force model.

The model here is written independently of the registry: a plain dict of registrations, and
lookups computed by scanning it. After every operation each index must agree with the scan,
every ``name_for`` must resolve back to its channel, and ``resolve`` must either return the
single hit of the first tier with hits or refuse.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from switchboard.channels import (
    AmbiguousName,
    ChannelEntry,
    ChannelRef,
    ChannelRegistry,
    Rejected,
    UnknownName,
    qualified_name,
)
from tests.channels.channels_support import Desc, desc

SERVERS = ["a", "b", "a:b", "s", "s:"]
IDS = ["room", "b:room", "s:room", "general", "x", "a:b:room", "1", "b"]
LABELS = ["", "#General", "general", "#room (A)", "room", "#x  (y)", "Room (b)", "#", "x (y"]
RAWS = [None, "1", "2", 3, "room"]
DM_NAMES = [None, "alice", "@Bob", "General"]
DM_IDS = [None, "42", 7]

descriptors = st.builds(
    desc,
    st.sampled_from(IDS),
    st.sampled_from(LABELS),
    raw=st.sampled_from(RAWS),
    dm_name=st.sampled_from(DM_NAMES),
    dm_id=st.sampled_from(DM_IDS),
)
items = st.lists(
    st.one_of(descriptors, st.builds(Rejected, st.none(), st.just("malformed"))), max_size=4
)


@dataclass(frozen=True)
class Register:
    server: str
    items: list[Desc | Rejected]


@dataclass(frozen=True)
class Change:
    server: str
    removed: list[str | int]
    updated: list[Desc | Rejected]
    added: list[Desc | Rejected]


@dataclass(frozen=True)
class RemoveServer:
    server: str


Op = Register | Change | RemoveServer

ops = st.one_of(
    st.builds(Register, st.sampled_from(SERVERS), items),
    st.builds(
        Change,
        st.sampled_from(SERVERS),
        st.lists(st.one_of(st.sampled_from(IDS), st.just(1)), max_size=3),
        items,
        items,
    ),
    st.builds(RemoveServer, st.sampled_from(SERVERS)),
)


# -- the brute-force model -----------------------------------------------------------------


@dataclass
class Model:
    """Registrations as a plain dict, and every key ever seen (to catch stale index keys)."""

    channels: dict[ChannelRef, Desc] = field(default_factory=dict)
    seen: set[str] = field(default_factory=set)

    def apply(self, op: Op) -> None:
        if isinstance(op, RemoveServer):
            for ref in [r for r in self.channels if r.server_id == op.server]:
                del self.channels[ref]
            return
        if isinstance(op, Change):
            for removed in op.removed:
                self.channels.pop(ChannelRef(op.server, str(removed)), None)
            for item in op.updated:
                if isinstance(item, Desc) and ChannelRef(op.server, item.id) in self.channels:
                    self.channels[ChannelRef(op.server, item.id)] = item
        added = op.items if isinstance(op, Register) else op.added
        for item in added:
            if isinstance(item, Desc):
                self.channels[ChannelRef(op.server, item.id)] = item
        for d in self.channels.values():
            self.seen.update(names_of(d))
        self.seen.update(qualified_name(r) for r in self.channels)


def model_label_keys(label: str) -> tuple[str | None, str | None]:
    """(whole key, bare key) by an independent reading of the rule."""
    if not label:
        return None, None
    key = (label[1:] if label.startswith("#") else label).casefold()
    if not key:
        return None, None
    match = re.fullmatch(r"(.*) \(([^)]*)\)", key)
    bare = match.group(1).rstrip() if match and match.group(1) else None
    return key, bare or None


def model_dm(d: Desc) -> tuple[str | None, str | None] | None:
    meta = d.metadata
    if not meta or meta.get("channelType") != "dm":
        return None
    name = meta.get("recipientName")
    key = None
    if isinstance(name, str) and name:
        key = name.removeprefix("@").casefold() or None
    elif d.label:
        rest = d.label[4:] if d.label.lower().startswith("dm: ") else d.label
        key = rest.removeprefix("@").casefold() or None
    rid = meta.get("recipientId")
    return key, None if rid is None else str(rid)


def model_raw(d: Desc) -> str | None:
    raw = d.address.get("channelId") if d.address else None
    return str(raw) if raw not in (None, "") else None


def names_of(d: Desc) -> set[str]:
    found = {d.id, d.label, d.label.upper(), "#" + d.label}
    raw = model_raw(d)
    if raw:
        found.add(raw)
    whole, bare = model_label_keys(d.label)
    found.update(k for k in (whole, bare) if k)
    dm = model_dm(d)
    if dm:
        if dm[0]:
            found.update({dm[0], "@" + dm[0]})
        if dm[1]:
            found.update({f"<@{dm[1]}>", f"<@!{dm[1]}>"})
    return found


def scan(model: Model, match: Callable[[ChannelRef, Desc], bool]) -> set[ChannelRef]:
    return {ref for ref, d in model.channels.items() if match(ref, d)}


def where(
    model: Model, key: Callable[[ChannelRef, Desc], object], value: object
) -> set[ChannelRef]:
    return {ref for ref, d in model.channels.items() if key(ref, d) == value}


def model_by_label(model: Model, query: str) -> set[ChannelRef]:
    key = model_label_keys(query)[0] if query else None
    if key is None:
        return set()
    whole = scan(model, lambda _r, d: model_label_keys(d.label)[0] == key)
    return whole or scan(model, lambda _r, d: model_label_keys(d.label)[1] == key)


def model_by_dm(model: Model, query: str) -> set[ChannelRef]:
    mention = re.fullmatch(r"<@!?(.+)>", query)
    if mention:
        return scan(model, lambda _r, d: (model_dm(d) or (None, None))[1] == mention.group(1))
    key = query.removeprefix("@").casefold()
    return scan(model, lambda _r, d: bool(key) and (model_dm(d) or (None, None))[0] == key)


def model_dm_tier(model: Model, query: str) -> set[ChannelRef]:
    """DMs for a name that starts with ``@`` or is a mention: exact, else partial names."""
    if re.fullmatch(r"<@!?(.+)>", query):
        return model_by_dm(model, query)
    if not query.startswith("@") or query == "@":
        return set()
    exact = model_by_dm(model, query)
    if exact:
        return exact
    key = query[1:].casefold()

    def partly(_r: ChannelRef, d: Desc) -> bool:
        name = (model_dm(d) or (None, None))[0]
        return name is not None and len(name) >= 3 and (key in name or key.startswith(name))

    return scan(model, partly)


def model_tiers(model: Model, name: str) -> list[set[ChannelRef]]:
    return [
        scan(model, lambda r, _d: name in (r.channel_id, qualified_name(r))),
        scan(model, lambda _r, d: model_raw(d) == name),
        model_by_label(model, name),
        model_dm_tier(model, name),
    ]


def got(entries: Iterable[ChannelEntry]) -> set[ChannelRef]:
    refs = [e.ref for e in entries]
    assert len(refs) == len(set(refs)), "a lookup returned one channel twice"
    return set(refs)


# -- the checks ------------------------------------------------------------------------------


def check_indexes(reg: ChannelRegistry, model: Model) -> None:
    assert {e.ref: e.descriptor for e in reg.entries()} == model.channels
    assert len(reg) == len(model.channels)
    assert reg.servers() == {r.server_id for r in model.channels}
    for server in SERVERS:
        assert got(reg.server_entries(server)) == where(model, lambda r, _d: r.server_id, server)
    for ref, d in model.channels.items():
        entry = reg.get(ref)
        assert entry is not None
        assert entry.raw_id == model_raw(d)
    for name in model.seen:
        assert got(reg.by_id(name)) == where(model, lambda r, _d: r.channel_id, name)
        assert got(reg.by_qualified_name(name)) == where(
            model, lambda r, _d: qualified_name(r), name
        )
        assert got(reg.by_raw_id(name)) == where(model, lambda _r, d: model_raw(d), name)
        assert got(reg.by_label(name)) == model_by_label(model, name), name
        assert got(reg.by_dm_name(name)) == model_by_dm(model, name), name
    stats = reg.statistics()
    descs = list(model.channels.values())
    label_keys = {k for d in descs for k in model_label_keys(d.label) if k}
    dms = [dm for d in descs if (dm := model_dm(d))]
    assert stats.channels == len(descs)
    assert stats.servers == len(reg.servers())
    assert stats.ids == len({r.channel_id for r in model.channels})
    assert stats.raw_ids == len({raw for d in descs if (raw := model_raw(d))})
    assert stats.label_keys == len(label_keys)
    assert stats.dm_names == len({n for n, _ in dms if n})
    assert stats.dm_ids == len({i for _, i in dms if i})


def check_names(reg: ChannelRegistry, model: Model) -> None:
    for ref in model.channels:
        name = reg.name_for(ref)
        alone_by_scan = any(
            model_tiers(model, candidate)[0] == {ref}
            for candidate in (ref.channel_id, qualified_name(ref))
        )
        assert reg.needs_server_id(ref) is not alone_by_scan
        if reg.needs_server_id(ref):
            assert name == ref.channel_id
            assert reg.resolve(name, server_id=ref.server_id).ref == ref
        else:
            assert reg.resolve(name).ref == ref


def check_resolve(reg: ChannelRegistry, model: Model) -> None:
    for name in model.seen:
        hits = next((tier for tier in model_tiers(model, name) if tier), set())
        if len(hits) == 1:
            assert reg.resolve(name).ref in hits
        elif hits:
            with pytest.raises(AmbiguousName) as caught:
                reg.resolve(name)
            assert set(caught.value.candidates) == hits
            assert len(caught.value.candidates) == len(hits)
        else:
            with pytest.raises(UnknownName):
                reg.resolve(name)


def run(op: Op, reg: ChannelRegistry) -> tuple[str, ...]:
    """Apply ``op``; the channel ids it dropped, for a :class:`RemoveServer`."""
    if isinstance(op, Register):
        change = reg.register(op.server, op.items)
        assert len(change.results) == len(op.items)
    elif isinstance(op, Change):
        change = reg.change(op.server, removed=op.removed, updated=op.updated, added=op.added)
        assert len(change.results) == len(op.removed) + len(op.updated) + len(op.added)
    else:
        return reg.remove_server(op.server)
    return ()


@settings(max_examples=150, deadline=None)
@given(st.lists(ops, max_size=10))
def test_random_sequences_keep_every_index_equal_to_a_brute_force_scan(
    sequence: list[Op],
) -> None:
    reg, model = ChannelRegistry(), Model()
    for op in sequence:
        dropped = sorted(r.channel_id for r in model.channels if r.server_id == op.server)
        removed = run(op, reg)
        if isinstance(op, RemoveServer):  # every channel of the server, each once
            assert sorted(removed) == dropped
        model.apply(op)
        check_indexes(reg, model)


@settings(max_examples=150, deadline=None)
@given(st.lists(ops, max_size=10))
def test_every_name_for_resolves_back_to_its_channel(sequence: list[Op]) -> None:
    reg, model = ChannelRegistry(), Model()
    for op in sequence:
        run(op, reg)
        model.apply(op)
    check_names(reg, model)


@settings(max_examples=150, deadline=None)
@given(st.lists(ops, max_size=10))
def test_resolve_returns_the_only_hit_of_the_first_tier_or_refuses(sequence: list[Op]) -> None:
    reg, model = ChannelRegistry(), Model()
    for op in sequence:
        run(op, reg)
        model.apply(op)
    check_resolve(reg, model)
