"""switchboard.channels: the pure channel registry, its indexes and name resolution.

Nothing in this package performs I/O, awaits, reads a clock or logs an effect: the host asks,
the registry answers with decisions and results, and the host carries them out.

The registry core sits at the top of the package:

- :mod:`~switchboard.channels.ref`: :class:`ChannelRef`, the ``(server_id, channel_id)`` key.
- :mod:`~switchboard.channels.descriptor`: the descriptor shape read, and key normalization.
- :mod:`~switchboard.channels.records`: entries, itemized results, change summaries.
- :mod:`~switchboard.channels.index` (with ``buckets`` and ``dm_index``): storage and the O(1)
  name indexes.
- :mod:`~switchboard.channels.registry`: :class:`ChannelRegistry`, register/changed/remove.
- :mod:`~switchboard.channels.errors`: :class:`ChannelsError`, the root of every exception
  the package raises.

Each concept built on it has its own folder:

- :mod:`switchboard.channels.names`: full name resolution (channel-registry.md §3, §4.4-§4.7);
  :mod:`~switchboard.channels.names.resolve` is the entry point, ``wording`` says every
  refusal.
- :mod:`switchboard.channels.lifecycle`: desired lifecycle state, the decision vocabulary and
  its events, speech into closed channels, and reconciliation plans (§5, §8.3).
- :mod:`switchboard.channels.prose`: the ``>>`` grammar, its modes, the streaming router and
  kept drafts (§4).
- :mod:`switchboard.channels.tuneouts`: tune-out epochs and their delivery (§5.3, §6).
"""

from switchboard.channels.descriptor import CheckedDescriptors, DescriptorLike, Rejected
from switchboard.channels.errors import ChannelsError
from switchboard.channels.index import IndexStatistics
from switchboard.channels.lifecycle.book import LifecycleBook, SubscriptionPolicy
from switchboard.channels.lifecycle.decisions import (
    Append,
    DesiredRecord,
    DesiredState,
    NoChange,
    Source,
    TuneOutScope,
    Vetoed,
)
from switchboard.channels.lifecycle.events import (
    DecisionEvent,
    DesiredStateSet,
    InvitationDeclined,
    TuneOutEnded,
    TuneOutStarted,
    TuneOutWake,
    decode_events,
)
from switchboard.channels.lifecycle.reconcile import OPEN_STATE, Convergence, TransportState
from switchboard.channels.lifecycle.speech import ChannelFacts, Reach, plan_speech
from switchboard.channels.names.errors import (
    AmbiguousName,
    ChannelNameError,
    InboundOnly,
    InvalidName,
    OwnChannelGone,
    UnknownName,
)
from switchboard.channels.names.history import DmMeta, LabelHistory, LabelSighting, extract_dm_meta
from switchboard.channels.names.naming import ChannelNames
from switchboard.channels.names.picking import NO_OWN, Own
from switchboard.channels.names.resolve import server_named
from switchboard.channels.names.tiers import Match, Tier
from switchboard.channels.names.wording import DELIVER, LOOKUP, POST, RUN, SPEECH, Caller, Choice
from switchboard.channels.prose.drafts import UNSENT, Draft, DraftBox, NoUnsentDraft
from switchboard.channels.prose.grammar import (
    ParseResult,
    Segment,
    is_prose_target_token,
    parse_speech,
)
from switchboard.channels.prose.route import (
    BLOCKED_STICKY,
    NO_STICKY,
    Disposition,
    ProseMode,
    Route,
    Sticky,
    TargetCheck,
)
from switchboard.channels.prose.stream import Piece, StreamingRouter
from switchboard.channels.records import (
    AllAccepted,
    Authorizer,
    BatchAuthorizer,
    ChannelEntry,
    ItemResult,
    RegistryChange,
)
from switchboard.channels.ref import ChannelRef, qualified_name
from switchboard.channels.registry import ChannelRegistry
from switchboard.channels.tuneouts.epochs import TuneOutBook, TuneOutTerms

__all__ = [
    "BLOCKED_STICKY",
    "DELIVER",
    "LOOKUP",
    "NO_OWN",
    "NO_STICKY",
    "OPEN_STATE",
    "POST",
    "RUN",
    "SPEECH",
    "UNSENT",
    "AllAccepted",
    "AmbiguousName",
    "Append",
    "Authorizer",
    "BatchAuthorizer",
    "Caller",
    "ChannelEntry",
    "ChannelFacts",
    "ChannelNameError",
    "ChannelNames",
    "ChannelRef",
    "ChannelRegistry",
    "ChannelsError",
    "CheckedDescriptors",
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
    "Vetoed",
    "decode_events",
    "extract_dm_meta",
    "is_prose_target_token",
    "parse_speech",
    "plan_speech",
    "qualified_name",
    "server_named",
]
