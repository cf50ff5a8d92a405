"""The raw host's reading of manifests: grants, feature sets, and the §17.2 digest.

Standard library only (the raw hosts start fast and share no code with Switchboard). The
policy is fixed and honest: grant every advertised channel leaf and ``pushEvents``, nothing
else. A feature set is enabled when its ``uses`` is a non-empty list of valid paths, all
granted. The digest is the §17.2 formula for the simple manifests the kit serves (ASCII keys,
no floats), used only by the host that wrongly refuses a mismatch.
"""

from __future__ import annotations

import base64
import hashlib
import json
from typing import Any

CHANNEL_LEAVES = (
    "register",
    "publish",
    "incoming",
    "lifecycle",
    "streaming",
    "acknowledge",
    "typing",
)
PATHS = frozenset(
    {
        "pushEvents",
        "tools",
        "modelInfo",
        "inferenceRequest",
        "inferenceRequest.streaming",
        "inferenceLifecycle",
        "contextHooks.beforeInference.observe",
        "contextHooks.beforeInference.inject.system",
        "contextHooks.beforeInference.inject.beforeUser",
        "contextHooks.beforeInference.inject.afterUser",
        *(f"channels.{leaf}" for leaf in CHANNEL_LEAVES),
    }
)
DIRECTIONS = frozenset({"inbound", "outbound", "bidirectional"})


def granted(mcpl: Any) -> set[str]:
    """What the raw host grants for an advertisement: channel leaves and pushEvents."""
    if not isinstance(mcpl, dict):
        return set()
    paths: set[str] = set()
    channels = mcpl.get("channels")
    if channels is True:
        paths.update(f"channels.{leaf}" for leaf in CHANNEL_LEAVES)
    elif isinstance(channels, dict):
        leaves = [k for k, v in channels.items() if v is True and k in CHANNEL_LEAVES]
        paths.update(f"channels.{leaf}" for leaf in leaves)
    if mcpl.get("pushEvents") is True:
        paths.add("pushEvents")
    return paths


def feature_sets(mcpl: Any) -> dict[str, list[str] | None]:
    """Declared sets by name: their ``uses`` when valid, else ``None``."""
    sets = mcpl.get("featureSets") if isinstance(mcpl, dict) else None
    out: dict[str, list[str] | None] = {}
    if isinstance(sets, dict):
        for name, decl in sets.items():
            uses = decl.get("uses") if isinstance(decl, dict) else None
            valid = isinstance(uses, list) and bool(uses) and all(u in PATHS for u in uses)
            out[str(name)] = list(uses) if valid and isinstance(uses, list) else None
    return out


def enabled(sets: dict[str, list[str] | None], grant: set[str]) -> set[str]:
    return {name for name, uses in sets.items() if uses is not None and set(uses) <= grant}


def descriptor_problem(item: Any) -> str | None:
    if not isinstance(item, dict) or not isinstance(item.get("id"), str):
        return "malformed: no id"
    if not isinstance(item.get("type"), str) or not isinstance(item.get("label"), str):
        return "malformed: type and label are required"
    if item.get("direction") not in DIRECTIONS:
        return "malformed: bad direction"
    return None


def digest(manifest: dict[str, Any]) -> str:
    body = {k: v for k, v in manifest.items() if k != "revision"}
    canonical = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    raw = hashlib.sha256(canonical.encode("utf-8")).digest()
    return "sha256:" + base64.urlsafe_b64encode(raw).decode("ascii").rstrip("=")
