"""What the kit must conclude about each planted defect, by category.

Each entry names the defect module, the exact set of checks it must fail, and a few checks
it must still pass (they show the defect is one mistake, not a broken connector). A full
suite run per defect would take minutes, so only those checks run, except where
``full_run`` says otherwise. ``tests/conformance/test_server_suite_defects.py`` runs them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

__all__ = ["CATEGORIES", "DEFECTS", "Defect"]

CATEGORIES: Final = (
    "handshake",
    "grants",
    "registration",
    "incoming",
    "publish",
    "lifecycle",
    "streaming",
    "requests",
    "manifest",
)


@dataclass(frozen=True, slots=True)
class Defect:
    """What one planted defect must fail, and what must still pass beside it.

    ``default_windows`` runs it with the kit's default silence windows rather than the
    short ones the other defects use (for a defect that acts late on purpose).
    """

    category: str
    fails: frozenset[str]
    also: tuple[str, ...] = ()
    full_run: bool = False
    default_windows: bool = False

    @property
    def only(self) -> list[str] | None:
        """The checks to run (``None``: all of them)."""
        return None if self.full_run else sorted(self.fails | set(self.also))


def _d(
    category: str,
    fails: set[str],
    *also: str,
    full_run: bool = False,
    default_windows: bool = False,
) -> Defect:
    assert category in CATEGORIES, category
    return Defect(category, frozenset(fails), also, full_run, default_windows)


_ADVERTISEMENT = "server.handshake.advertisement_shape"
_IDLE = "server.policy.idle_before_request"
_NOTIFICATION = "server.policy.notification_never_ready"
_RECEIPT = "server.policy.receipt_returned"
_WITHIN = "server.grant.acts_within_grant"
_WILDCARD = "server.grant.wildcard_semantics"
_REDUCTION = "server.grant.reduction_respected"
_ENABLED = "server.policy.enabled_disabled_semantics"
_ANSWERED = "server.requests.every_request_answered"
_MALFORMED = "server.requests.survives_malformed_input"
_UNKNOWN_FIELDS = "server.requests.unknown_fields_tolerated"
_REGISTER = "server.channels.register_request_form"
_REJECTION = "server.channels.itemized_rejection_honoured"
_INCOMING = "server.channels.incoming_is_request"
_DELIVERS = "server.channels.publish_delivers"
_UNKNOWN_CHANNEL = "server.channels.publish_unknown_channel"
_OPEN = "server.channels.open"
_CLOSE = "server.channels.close"
_SIDE_EFFECT = "server.channels.no_delivery_side_effect"
_GAPS = "server.channels.streaming_gaps_tolerated"
_FETCH = "server.manifest.fetch_returns_full_manifest"
_STDOUT = "server.transport.stdout_only_messages"

DEFECTS: Final[dict[str, Defect]] = {
    # handshake
    "no_mcpl": _d("handshake", {_ADVERTISEMENT}, full_run=True),
    # a whole run: a banner line must fail S-46 and nothing else
    "stdout_banner": _d("handshake", {_STDOUT}, full_run=True),
    "array_feature_sets": _d("handshake", {_ADVERTISEMENT}, _FETCH, "server.policy.receipt_mode"),
    "invalid_uses": _d("handshake", {_ADVERTISEMENT}, "server.policy.receipt_mode", _FETCH),
    "register_before_policy": _d(
        "handshake",
        {_IDLE, _NOTIFICATION},
        "server.policy.absent_grant_is_empty",
        _WITHIN,
        _UNKNOWN_CHANNEL,
    ),
    # registers on a 2.5 s timer, not on the policy: only a long enough window sees it
    "register_on_timer": _d("handshake", {_IDLE, _NOTIFICATION}, _WITHIN, default_windows=True),
    # grants and policy
    "notification_readies": _d("grants", {_NOTIFICATION, _ENABLED}, _IDLE, _RECEIPT),
    "receipt_mode_full": _d(
        "grants", {"server.policy.receipt_mode"}, "server.policy.receipt_schema", _RECEIPT
    ),
    "ungranted_accepted": _d(
        "grants",
        {_WITHIN, "server.grant.overlapping_lists_refused", _REDUCTION, _ENABLED},
        _WILDCARD,
    ),
    "bare_parent_grants_all": _d("grants", {_WILDCARD}, _WITHIN, _REDUCTION),
    "overlap_accepted": _d("grants", {"server.grant.overlapping_lists_refused"}, _WITHIN),
    "absent_grant_means_all": _d("grants", {"server.policy.absent_grant_is_empty"}, _RECEIPT),
    # a whole run: one failure for the cause; the checks that need a receipt are N/EX
    "policy_not_found": _d("grants", {_RECEIPT}, _ADVERTISEMENT, full_run=True),
    # registration
    "non_itemized_register": _d("registration", {_REJECTION}, _REGISTER, _INCOMING),
    "malformed_descriptor": _d("registration", {_REGISTER}, _REJECTION),
    "results_by_position": _d("registration", {_REJECTION}, _REGISTER),
    # nothing to fail, but the report must warn that no channels were registered
    "register_raises": _d("registration", set(), _ANSWERED),
    # incoming
    "incoming_notification": _d("incoming", {_INCOMING}, "server.tags.namespaced", _DELIVERS),
    "incoming_before_receipt": _d("incoming", {_IDLE}, _NOTIFICATION, _INCOMING),
    "incoming_epoch_timestamp": _d("incoming", {_INCOMING}, "server.tags.namespaced"),
    # publish
    "publish_without_message_id": _d("publish", {_DELIVERS}, _UNKNOWN_CHANNEL, _UNKNOWN_FIELDS),
    "unknown_channel_wrong_code": _d("publish", {_UNKNOWN_CHANNEL, _REJECTION}, _CLOSE),
    # lifecycle: channels/open, channels/close, channels/acknowledge
    "close_unknown_accepted": _d("lifecycle", {_CLOSE}, _OPEN, _UNKNOWN_CHANNEL),
    "open_other_channel": _d("lifecycle", {_OPEN}, _CLOSE),
    "open_unknown_accepted": _d("lifecycle", {_OPEN}, _CLOSE),
    "acknowledge_ungranted": _d("lifecycle", {_WITHIN}, _WILDCARD, _ANSWERED),
    # streaming and typing: never a delivery
    "delivers_on_complete": _d("streaming", {_SIDE_EFFECT}, _GAPS, _DELIVERS),
    "chunk_posts": _d("streaming", {_SIDE_EFFECT}, _GAPS),
    "complete_answered": _d("streaming", {_GAPS}, _SIDE_EFFECT),
    "typing_posts": _d("streaming", {_SIDE_EFFECT}, _GAPS),
    # requests and robustness
    "unknown_method_invalid_params": _d("requests", {_ANSWERED}, _UNKNOWN_FIELDS, _MALFORMED),
    "unknown_method_silent": _d("requests", {_ANSWERED}, _MALFORMED),
    "dies_on_malformed_json": _d("requests", {_MALFORMED}, _ANSWERED, _ADVERTISEMENT),
    "string_id_dropped": _d("requests", {_ANSWERED}, _MALFORMED),
    "rollback_result_bare": _d(
        "requests",
        {"server.state.rollback_result_shape"},
        "server.state.rollback_unknown_checkpoint",
    ),
    # a whole run: 0.4 array-form sets with rollback: true get the state checks too; S-44 is
    # its one failure beyond S-01, which the array form alone fails (its control, array_rollkit)
    "array_rollback_unknown_accepted": _d(
        "requests",
        {_ADVERTISEMENT, "server.state.rollback_unknown_checkpoint"},
        "server.state.rollback_result_shape",
        full_run=True,
    ),
    # manifest
    "revision_not_digest": _d(
        "manifest",
        {"server.manifest.revision_is_digest", _FETCH},
        "server.manifest.revision_stable_across_restarts",
    ),
    "bursts_not_coalesced": _d(
        "manifest",
        {"server.manifest.bursts_coalesced"},
        "server.manifest.changed_params_exact",
        "server.manifest.revision_is_digest",
    ),
}
