"""switchboard.channels: the pure channel registry, its indexes and name resolution.

Nothing in this package performs I/O, awaits, reads a clock or logs an effect: the host asks,
the registry answers with decisions and results, and the host carries them out.

- :mod:`~switchboard.channels.ref`: :class:`ChannelRef`, the ``(server_id, channel_id)`` key.
- :mod:`~switchboard.channels.descriptor`: the descriptor shape read, and key normalization.
- :mod:`~switchboard.channels.records`: entries, itemized results, change summaries.
- :mod:`~switchboard.channels.index`: storage and the O(1) name indexes.
- :mod:`~switchboard.channels.names` (with ``tiers``, ``picking``, ``wording``, ``suggest``,
  ``selectors``, ``shown``, ``dm_index``, ``label_history``): full name resolution
  (channel-registry.md §3, §4.4-§4.7); :mod:`~switchboard.channels.resolve` is the entry point.
- :mod:`~switchboard.channels.decisions`, ``decision_events``, ``lifecycle``,
  ``lifecycle_speech``, ``lifecycle_reconcile``, ``tuneout``, ``tuneout_delivery``: desired
  lifecycle state, its decision events and replay, reconciliation plans, tune-outs.
- :mod:`~switchboard.channels.registry`: :class:`ChannelRegistry`, register/changed/remove.
- :mod:`~switchboard.channels.prose`, ``prose_route``, ``prose_stream``, ``prose_drafts``: the
  ``>>`` grammar, its modes, the streaming router and kept drafts.
"""

from switchboard.channels.decision_events import (
    DecisionEvent,
    DesiredStateSet,
    InvitationDeclined,
    TuneOutEnded,
    TuneOutStarted,
    TuneOutWake,
    decode_events,
)
from switchboard.channels.decisions import (
    Append,
    DesiredRecord,
    DesiredState,
    NoChange,
    Refused,
    Source,
    TuneOutScope,
)
from switchboard.channels.descriptor import DescriptorLike, Rejected
from switchboard.channels.errors import (
    AmbiguousName,
    ChannelNameError,
    InboundOnly,
    InvalidName,
    OwnChannelGone,
    UnknownName,
)
from switchboard.channels.index import IndexStatistics
from switchboard.channels.label_history import DmMeta, LabelHistory, LabelSighting, extract_dm_meta
from switchboard.channels.lifecycle import LifecycleBook, SubscriptionPolicy
from switchboard.channels.lifecycle_reconcile import Convergence, TransportState
from switchboard.channels.lifecycle_speech import ChannelFacts, Reach, plan_speech
from switchboard.channels.names import ChannelNames
from switchboard.channels.picking import NO_OWN, Own
from switchboard.channels.prose import ParseResult, Segment, is_prose_target_token, parse_speech
from switchboard.channels.prose_drafts import UNSENT, Draft, DraftBox, NoUnsentDraft
from switchboard.channels.prose_route import (
    BLOCKED_STICKY,
    NO_STICKY,
    Disposition,
    ProseMode,
    Route,
    Sticky,
    TargetCheck,
)
from switchboard.channels.prose_stream import Piece, StreamingRouter
from switchboard.channels.records import Authorizer, ChannelEntry, ItemResult, RegistryChange
from switchboard.channels.ref import ChannelRef, qualified_name
from switchboard.channels.registry import ChannelRegistry
from switchboard.channels.tiers import Match, Tier
from switchboard.channels.tuneout import TuneOutBook, TuneOutTerms
from switchboard.channels.wording import DELIVER, LOOKUP, POST, RUN, SPEECH, Caller, Choice

__all__ = [
    "BLOCKED_STICKY",
    "DELIVER",
    "LOOKUP",
    "NO_OWN",
    "NO_STICKY",
    "POST",
    "RUN",
    "SPEECH",
    "UNSENT",
    "AmbiguousName",
    "Append",
    "Authorizer",
    "Caller",
    "ChannelEntry",
    "ChannelFacts",
    "ChannelNameError",
    "ChannelNames",
    "ChannelRef",
    "ChannelRegistry",
    "Choice",
    "Convergence",
    "DecisionEvent",
    "DescriptorLike",
    "DesiredRecord",
    "DesiredState",
    "DesiredStateSet",
    "Disposition",
    "DmMeta",
    "Draft",
    "DraftBox",
    "InboundOnly",
    "IndexStatistics",
    "InvalidName",
    "InvitationDeclined",
    "ItemResult",
    "LabelHistory",
    "LabelSighting",
    "LifecycleBook",
    "Match",
    "NoChange",
    "NoUnsentDraft",
    "Own",
    "OwnChannelGone",
    "ParseResult",
    "Piece",
    "ProseMode",
    "Reach",
    "Refused",
    "RegistryChange",
    "Rejected",
    "Route",
    "Segment",
    "Source",
    "Sticky",
    "StreamingRouter",
    "SubscriptionPolicy",
    "TargetCheck",
    "Tier",
    "TransportState",
    "TuneOutBook",
    "TuneOutEnded",
    "TuneOutScope",
    "TuneOutStarted",
    "TuneOutTerms",
    "TuneOutWake",
    "UnknownName",
    "decode_events",
    "extract_dm_meta",
    "is_prose_target_token",
    "parse_speech",
    "plan_speech",
    "qualified_name",
]
