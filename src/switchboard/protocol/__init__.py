"""switchboard.protocol: the MCPL 0.5 vocabulary, with no I/O.

Of the other switchboard packages it imports only :mod:`switchboard.transport.errors`: an MCPL
error is a JSON-RPC ``RpcError`` with an MCPL code.

- :mod:`.errors` — error codes, :class:`McplError` with one subclass per code, the table that
  reads an error object as its class (:func:`read_error`), and :class:`ProtocolError`, the
  root of everything this package raises;
- :mod:`.capabilities` — the 17 capability paths, method gates, the grant matcher
  (:class:`Grant`, :func:`effective_grant`) and the advertisement flattener;
- :mod:`.featuresets` — feature-set declarations and their enabled/disabled derivation;
- :mod:`.manifest` — the server manifest from ``initialize`` and the host's advertisement;
- :mod:`.manifest_diff` — what a changed manifest changes (revoked, pending, narrowed);
- :mod:`.messages` — pydantic models of the methods' params and results (re-exported here).
"""

from __future__ import annotations

from .capabilities import (
    CAPABILITY_PATHS,
    METHOD_GATES,
    Grant,
    advertised_paths,
    effective_grant,
    path_matches,
    unknown_advertised_members,
    validate_path_charset,
)
from .descriptor_check import (
    FastDescriptor,
    RegisterFastParams,
    fast_descriptors,
    read_register_params,
    register_channels,
)
from .digest import (
    IDENTIFIER_PATTERN,
    DigestError,
    DigestErrorCode,
    canonical_manifest_bytes,
    is_identifier,
    manifest_digest,
    set_order,
)
from .errors import (
    ERROR_CLASSES,
    CapabilityDenied,
    ChannelNotPermitted,
    ChannelOpenFailed,
    CheckpointNotFound,
    ErrorCode,
    FeatureSetNotEnabled,
    McplError,
    ProtocolError,
    UnknownChannel,
    UnknownFeatureSet,
    from_rpc,
    read_error,
)
from .fastpath import (
    CheckedMessage,
    CheckedMessages,
    IncomingRawParams,
    accepted_results,
    check_incoming_params,
    incoming_is_valid,
    read_incoming_params,
)
from .featuresets import (
    REASON_CAPABILITY_DENIED,
    REASON_DISABLED,
    REASON_INVALID_USES,
    REASON_NOT_SELECTED,
    FeatureSetDecl,
    derive_enabled,
    parse_feature_sets,
)
from .manifest import (
    MCP_PROTOCOL_VERSION,
    MCPL_VERSION,
    Manifest,
    host_advertisement,
    parse_manifest,
)
from .manifest_diff import (
    Impact,
    ManifestChange,
    Narrowing,
    diff_manifests,
    narrow,
    read_fetched_manifest,
)
from .messages import *  # noqa: F403
from .messages import __all__ as _messages_all

__all__ = [
    "Impact",
    "ManifestChange",
    "Narrowing",
    "diff_manifests",
    "narrow",
    "read_fetched_manifest",
    "CAPABILITY_PATHS",
    "IncomingRawParams",
    "RegisterFastParams",
    "accepted_results",
    "check_incoming_params",
    "register_channels",
    "ERROR_CLASSES",
    "IDENTIFIER_PATTERN",
    "DigestError",
    "DigestErrorCode",
    "canonical_manifest_bytes",
    "incoming_is_valid",
    "read_incoming_params",
    "read_register_params",
    "FastDescriptor",
    "fast_descriptors",
    "is_identifier",
    "manifest_digest",
    "set_order",
    "MCPL_VERSION",
    "MCP_PROTOCOL_VERSION",
    "METHOD_GATES",
    "REASON_CAPABILITY_DENIED",
    "REASON_DISABLED",
    "REASON_INVALID_USES",
    "REASON_NOT_SELECTED",
    "CapabilityDenied",
    "ChannelNotPermitted",
    "ChannelOpenFailed",
    "CheckedMessage",
    "CheckedMessages",
    "CheckpointNotFound",
    "ErrorCode",
    "FeatureSetDecl",
    "FeatureSetNotEnabled",
    "Grant",
    "Manifest",
    "McplError",
    "ProtocolError",
    "UnknownChannel",
    "UnknownFeatureSet",
    "advertised_paths",
    "derive_enabled",
    "effective_grant",
    "from_rpc",
    "host_advertisement",
    "parse_feature_sets",
    "parse_manifest",
    "path_matches",
    "read_error",
    "unknown_advertised_members",
    "validate_path_charset",
    *_messages_all,
]
