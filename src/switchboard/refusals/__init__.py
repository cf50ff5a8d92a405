"""switchboard.refusals: what an agent is told when something is not done, and publish outcomes."""

from switchboard.refusals.errors import (
    HostError,
)
from switchboard.refusals.outcome import (
    PublishOutcome,
    PublishStatus,
)
from switchboard.refusals.refusal import (
    ASK_TO_CLOSE,
    GONE,
    NEXT_STEP,
    RETRY,
    Refusal,
    RefusalKind,
    cancel_all_except_first,
    cancel_first,
    candidates_of,
    directory_refusal,
    name_refusal,
    only_one,
    pass_a_source,
    pick_a_candidate,
    storage_refusal,
)

__all__ = [
    "ASK_TO_CLOSE",
    "GONE",
    "NEXT_STEP",
    "RETRY",
    "HostError",
    "PublishOutcome",
    "PublishStatus",
    "Refusal",
    "RefusalKind",
    "cancel_all_except_first",
    "cancel_first",
    "candidates_of",
    "directory_refusal",
    "name_refusal",
    "only_one",
    "pass_a_source",
    "pick_a_candidate",
    "storage_refusal",
]
