"""Labels seen over time, per bare channel id, and the read-only durable resolver.

:class:`LabelHistory` remembers which channel id each label meant (channel-registry.md §2.8), so
a label that once picked a channel still finds it after the label moved;
:func:`extract_dm_meta` reads the DM hints of a descriptor's metadata.

What it deliberately does not know: the durable log itself, clocks and servers.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from switchboard.channels.descriptor import bare_label_key, dm_query, label_key
from switchboard.channels.index import ChannelIndex
from switchboard.channels.names.shown import picked
from switchboard.channels.names.tiers import match_name

__all__ = ["DmMeta", "LabelHistory", "LabelSighting", "extract_dm_meta", "resolve_durable"]


@dataclass(frozen=True, slots=True)
class DmMeta:
    """A descriptor's DM hints; a missing field is None (``is_dm`` is never recorded False)."""

    recipient_id: str | None = None
    recipient_name: str | None = None
    is_dm: bool = False


@dataclass(frozen=True, slots=True)
class LabelSighting:
    """One kept sighting, as appended to the label-history log."""

    channel_id: str
    label: str
    recipient_id: str | None = None
    recipient_name: str | None = None
    is_dm: bool = False


def extract_dm_meta(metadata: Mapping[str, object] | None) -> DmMeta:
    """The DM hints of ``metadata``: string (or integer) recipient id, string name, is-DM."""
    if not metadata:
        return DmMeta()
    rid = metadata.get("recipientId")
    name = metadata.get("recipientName")
    return DmMeta(
        str(rid) if (type(rid) is str and rid) or type(rid) is int else None,
        name if type(name) is str and name else None,
        metadata.get("channelType") == "dm",
    )


Ids = dict[str, dict[str, None]]  # key -> channel ids, in first-seen order


def _link(table: Ids, key: str | None, channel_id: str) -> None:
    if key:
        table.setdefault(key, {})[channel_id] = None


def _unlink(table: Ids, key: str | None, channel_id: str) -> None:
    ids = table.get(key) if key else None
    if ids is not None:
        ids.pop(channel_id, None)
        if not ids:
            del table[key]  # type: ignore[arg-type]


class LabelHistory:
    """Label sightings per bare channel id, with O(1) reverse lookups (see module docs).

    What it knows (channel-registry.md §2.8):

    - :func:`extract_dm_meta`: the DM hints of a descriptor's metadata (recipient id and name, and
      ``is_dm`` only ever as True, when ``channelType == "dm"``).
    - :class:`LabelHistory`: every label sighting worth keeping, keyed by the **bare channel id**
      (deliberately not by server: the history answers "which id did this label mean").
      :meth:`LabelHistory.sight` decides whether a sighting is new; when it is, the history is
      updated and the :class:`LabelSighting` to append to the durable log is returned (the caller
      writes it and stamps the time). Ignored: an empty label; a label equal to the channel id once
      a real label is known (a placeholder never clobbers a label); a sighting that changes nothing.
      :meth:`LabelHistory.replay` rebuilds the history from the log and skips junk.
    - History's DM classification is the lenient, legacy one: recorded ``is_dm``, or a latest label
      starting with ``dm: ``, or ``:dm:`` in the id. Its DM name is the recipient name, else the
      latest label without ``dm: ``, case-folded.
    - :func:`resolve_durable`: the live resolver first, then history (old labels too, bare labels,
      DM names and recipient ids). It returns a bare channel id, and only when exactly one id
      answers. It is for reading old references, **never for sending**: history has no servers and
      outlives registrations, so it cannot promise what the live resolver promises.

    Every lookup is a dict probe; a sighting updates a constant number of keys.
    """

    __slots__ = ("_by_dm_id", "_by_dm_name", "_by_label", "_dm", "_dm_key", "_labels", "_rid")

    def __init__(self) -> None:
        self._labels: dict[str, dict[str, None]] = {}  # id -> every label, latest last
        self._rid: dict[str, tuple[str | None, str | None]] = {}  # id -> (recipient id, name)
        self._dm: set[str] = set()  # ids recorded as DMs
        self._dm_key: dict[str, tuple[str | None, str | None]] = {}  # id -> indexed DM keys
        self._by_label: Ids = {}
        self._by_dm_name: Ids = {}
        self._by_dm_id: Ids = {}

    def latest(self, channel_id: str) -> str | None:
        """The latest label kept for ``channel_id``."""
        labels = self._labels.get(channel_id)
        return next(reversed(labels)) if labels else None

    def labels(self, channel_id: str) -> tuple[str, ...]:
        """Every label kept for ``channel_id``, oldest first (a label seen again moves last)."""
        return tuple(self._labels.get(channel_id, ()))

    def is_dm(self, channel_id: str) -> bool:
        """History's lenient DM classification (see :class:`LabelHistory`)."""
        latest = self.latest(channel_id) or ""
        return channel_id in self._dm or latest[:4].casefold() == "dm: " or ":dm:" in channel_id

    def dm_name(self, channel_id: str) -> str | None:
        """History's DM name key for ``channel_id``, or None when it is not a DM."""
        if not self.is_dm(channel_id):
            return None
        name = self._rid.get(channel_id, (None, None))[1]
        if name is None:
            latest = self.latest(channel_id) or ""
            name = latest[4:] if latest[:4].casefold() == "dm: " else latest
        return dm_query("@" + name.removeprefix("@"))[1] or None

    def sight(
        self, channel_id: str, label: str | None, dm: DmMeta = DmMeta()
    ) -> LabelSighting | None:
        """Record a sighting; the :class:`LabelSighting` to append, or None when ignored."""
        if not label:
            return None
        known = self._labels.get(channel_id)
        if label == channel_id and known:
            return None
        rid, name = self._rid.get(channel_id, (None, None))
        if (
            known
            and self.latest(channel_id) == label
            and dm.recipient_id in (None, rid)
            and dm.recipient_name in (None, name)
            and (not dm.is_dm or channel_id in self._dm)
        ):
            return None
        sighting = LabelSighting(channel_id, label, dm.recipient_id, dm.recipient_name, dm.is_dm)
        self._apply(sighting)
        return sighting

    def replay(self, sightings: Iterable[object]) -> int:
        """Apply logged sightings in order, skipping anything malformed; how many applied."""
        applied = 0
        for item in sightings:
            if (
                isinstance(item, LabelSighting)
                and type(item.channel_id) is str
                and type(item.label) is str
                and item.label
            ):
                self._apply(item)
                applied += 1
        return applied

    def _apply(self, s: LabelSighting) -> None:
        channel_id = s.channel_id
        labels = self._labels.setdefault(channel_id, {})
        labels.pop(s.label, None)
        labels[s.label] = None
        key = label_key(s.label)
        _link(self._by_label, key, channel_id)
        _link(self._by_label, bare_label_key(key) if key else None, channel_id)
        rid, name = self._rid.get(channel_id, (None, None))
        self._rid[channel_id] = (s.recipient_id or rid, s.recipient_name or name)
        if s.is_dm:
            self._dm.add(channel_id)
        old_name, old_id = self._dm_key.get(channel_id, (None, None))
        new_name = self.dm_name(channel_id)
        new_id = self._rid[channel_id][0] if self.is_dm(channel_id) else None
        if (new_name, new_id) != (old_name, old_id):
            _unlink(self._by_dm_name, old_name, channel_id)
            _unlink(self._by_dm_id, old_id, channel_id)
            _link(self._by_dm_name, new_name, channel_id)
            _link(self._by_dm_id, new_id, channel_id)
            self._dm_key[channel_id] = (new_name, new_id)

    def ids_for(self, name: str) -> tuple[str, ...]:
        """Channel ids history associates with ``name``: ``<@id>`` by recipient id, ``@name``
        by DM name, anything else by any label ever kept, whole or without its suffix."""
        is_mention, key = dm_query(name)
        if is_mention:
            return tuple(self._by_dm_id.get(key, ()))
        if name[:1] == "@":
            return tuple(self._by_dm_name.get(key, ()))
        return tuple(self._by_label.get(label_key(name), ()))


def resolve_durable(index: ChannelIndex, history: LabelHistory, name: str) -> str | None:
    """A bare channel id for ``name``: live first, then history; None unless exactly one.

    Live channels that share one id on several servers count as that one id. Never use the
    result to send: it names no server.
    """
    target = name.strip()
    if not target:
        return None
    entry = picked(index, target)
    if entry is not None:
        return entry.ref.channel_id
    match = match_name(index, target)
    if match is not None:
        ids = {e.ref.channel_id for e in match.hits}
        return ids.pop() if len(ids) == 1 and not match.more else None
    found = history.ids_for(target)
    return found[0] if len(found) == 1 else None
