"""Pure shape rules for what a server sends, each returning the problems it finds as sentences.

What this module knows (mcpl-protocol.md 1.4-1.5, 3.5, 3.8, 3.9, 3.14, 3.15, 4.2, 4.8):
the advertisement at ``initialize`` (S-01), the degradation receipt (S-06, S-07), channel
descriptors (S-25), incoming messages (S-28), ``push/event`` params (S-16), event tags
(S-18, S-19), ``mcpl/manifestChanged`` params and the change domains between two manifests
(S-40), and the ``context/beforeInference`` answer (S-23).

Each function takes the JSON value as received and returns a list of problems (empty when
it conforms); none raises on odd input. They read the spec independently of the host: a
host is tolerant, the kit is exact.

What it deliberately does not know: the wire, timing, or which check uses which rule.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import datetime
from typing import Any, Final

from pydantic import ValidationError

from switchboard.protocol import (
    CAPABILITY_PATHS,
    ChannelDescriptor,
    IncomingMessage,
    content_adapter,
    validate_path_charset,
)

__all__ = [
    "CHAT_VOCABULARY",
    "DOMAINS",
    "advertisement_problems",
    "change_domains",
    "descriptor_problems",
    "incoming_problems",
    "injection_problems",
    "is_iso8601",
    "manifest_changed_problems",
    "push_problems",
    "receipt_problems",
    "tag_problems",
    "tag_warnings",
    "umbrella_problems",
]

REVISION: Final = re.compile(r"^sha256:[A-Za-z0-9_-]{43}$")
DOMAINS: Final = ("capabilities", "featureSets", "tagOntology")
POSITIONS: Final = frozenset({"system", "beforeUser", "afterUser"})
CAPABILITY_ROOTS: Final = frozenset(path.split(".")[0] for path in CAPABILITY_PATHS)
CHAT_VOCABULARY: Final = frozenset(
    {
        "addressed",
        "mention",
        "reply",
        "dm",
        "ambient",
        "broadcast",
        "to-self",
        "from-human",
        "from-bot",
        "from-self",
        "from-agent",
        "edited",
        "deleted",
        "reaction",
        "reaction-remove",
        "has-image",
        "has-audio",
        "has-file",
        "has-link",
        "command",
        "private",
        "group",
        "thread",
    }
)
_ADDRESSING: Final = frozenset({"chat:addressed", "chat:mention", "chat:reply", "chat:dm"})
_UMBRELLA: Final = {"chat:mention": "chat:addressed", "chat:reply": "chat:addressed"}
_TAG: Final = re.compile(r"^[^:]+:.+$")


def is_iso8601(value: Any) -> bool:
    """Whether ``value`` is an ISO-8601 date-time string (``Z`` accepted)."""
    if not isinstance(value, str) or "T" not in value:
        return False
    try:
        datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return False
    return True


def _boolean_tree(value: Any, where: str) -> list[str]:
    if isinstance(value, bool):
        return []
    if not isinstance(value, dict):
        return [f"{where} is {type(value).__name__}, not a boolean or an object of booleans"]
    problems: list[str] = []
    for key, child in value.items():
        problems.extend(_boolean_tree(child, f"{where}.{key}"))
    return problems


def _feature_set_problems(name: Any, entry: Any) -> list[str]:
    if not isinstance(name, str) or not validate_path_charset(name):
        return [f"feature-set name {name!r} is outside [A-Za-z0-9._:*-]"]
    if not isinstance(entry, dict):
        return [f"feature set {name!r} is not an object"]
    problems: list[str] = []
    if not isinstance(entry.get("description"), str):
        problems.append(f"feature set {name!r} has no description string")
    uses = entry.get("uses")
    if not isinstance(uses, list) or not uses:
        problems.append(f"feature set {name!r}: uses must be a non-empty array")
    else:
        bad = [u for u in uses if u not in CAPABILITY_PATHS]
        if bad:
            problems.append(f"feature set {name!r} uses {bad!r}, not among the 17 paths")
    return problems


def advertisement_problems(result: Any) -> list[str]:
    """S-01: the ``initialize`` result's ``capabilities.experimental.mcpl`` object."""
    capabilities = result.get("capabilities") if isinstance(result, dict) else None
    experimental = capabilities.get("experimental") if isinstance(capabilities, dict) else None
    mcpl = experimental.get("mcpl") if isinstance(experimental, dict) else None
    if not isinstance(mcpl, dict):
        return ["the initialize result has no capabilities.experimental.mcpl object"]
    problems: list[str] = []
    version = mcpl.get("version")
    if version != "0.5":
        problems.append(f"version is {version!r}, expected the string '0.5'")
    revision = mcpl.get("revision")
    if revision is not None and not (isinstance(revision, str) and REVISION.match(revision)):
        problems.append(f"revision {revision!r} is not sha256:<43 base64url characters>")
    feature_sets = mcpl.get("featureSets")
    if isinstance(feature_sets, dict):
        for name, entry in feature_sets.items():
            problems.extend(_feature_set_problems(name, entry))
    elif feature_sets is not None:
        problems.append(
            f"featureSets is {type(feature_sets).__name__}, not an object keyed by name"
        )
    for key, value in mcpl.items():
        if key in CAPABILITY_ROOTS:
            problems.extend(_boolean_tree(value, key))
    return problems


def receipt_problems(result: Any) -> list[str]:
    """S-06, S-07: the receipt's schema (``accepted``, ``fallback``, unavailable entries)."""
    if not isinstance(result, dict):
        return [f"the receipt is {type(result).__name__}, not an object"]
    problems: list[str] = []
    accepted = result.get("accepted")
    if not isinstance(accepted, bool):
        problems.append(f"accepted is {accepted!r}, not a boolean")
    if accepted is False and result.get("fallback") not in ("mcp-only", "close"):
        problems.append(f"accepted:false with fallback {result.get('fallback')!r}")
    entries = result.get("unavailableFeatures")
    if entries is not None and not isinstance(entries, list):
        problems.append("unavailableFeatures is not an array")
    for entry in entries if isinstance(entries, list) else ():
        if not isinstance(entry, dict):
            problems.append(f"unavailableFeatures entry {entry!r} is not an object")
            continue
        missing = entry.get("missingCapabilities")
        if not isinstance(entry.get("featureSet"), str):
            problems.append(f"unavailableFeatures entry {entry!r} has no featureSet")
        if not isinstance(missing, list) or not all(isinstance(m, str) for m in missing):
            problems.append(f"unavailableFeatures entry {entry!r}: bad missingCapabilities")
        if not isinstance(entry.get("effect"), str):
            problems.append(f"unavailableFeatures entry {entry!r} has no effect")
    return problems


def descriptor_problems(item: Any) -> list[str]:
    """S-25: one channel descriptor (``id``, ``type``, ``label``, ``direction``)."""
    try:
        ChannelDescriptor.model_validate(item)
    except ValidationError as exc:
        fields = sorted({".".join(str(p) for p in e["loc"]) or "descriptor" for e in exc.errors()})
        label = item.get("id") if isinstance(item, dict) else item
        return [f"descriptor {label!r} is malformed at {', '.join(fields)}"]
    return []


def incoming_problems(item: Any) -> list[str]:
    """S-28: one ``channels/incoming`` message (required members, ISO-8601, content)."""
    label = item.get("messageId") if isinstance(item, dict) else item
    try:
        message = IncomingMessage.model_validate(item)
    except ValidationError as exc:
        fields = sorted({".".join(str(p) for p in e["loc"]) or "message" for e in exc.errors()})
        return [f"incoming message {label!r} is malformed at {', '.join(fields)}"]
    if not is_iso8601(message.timestamp):
        return [f"incoming message {label!r}: timestamp {message.timestamp!r} is not ISO 8601"]
    return []


def push_problems(params: Any) -> list[str]:
    """S-16: ``push/event`` params (``featureSet``, ``eventId``, timestamp, content)."""
    if not isinstance(params, dict):
        return ["push/event params are not an object"]
    problems: list[str] = []
    for key in ("featureSet", "eventId"):
        if not isinstance(params.get(key), str) or not params.get(key):
            problems.append(f"push/event has no {key}")
    if not is_iso8601(params.get("timestamp")):
        problems.append(f"push/event timestamp {params.get('timestamp')!r} is not ISO 8601")
    payload = params.get("payload")
    content = payload.get("content") if isinstance(payload, dict) else None
    try:
        content_adapter.validate_python(content)
    except ValidationError:
        problems.append("push/event payload.content is not a valid ContentBlock[]")
    return problems


def tag_problems(tags: Any) -> list[str]:
    """S-18 (MUST part): tags are an array of namespaced ``ns:value`` strings."""
    if tags is None:
        return []
    if not isinstance(tags, list):
        return [f"tags {tags!r} are not an array"]
    bare = [tag for tag in tags if not isinstance(tag, str) or not _TAG.match(tag)]
    return [f"tags without a namespace: {bare!r}"] if bare else []


def tag_warnings(tags: Any) -> list[str]:
    """S-18 (SHOULD part): chat tags from the core vocabulary, ambient never addressed."""
    if not isinstance(tags, list):
        return []
    found = {tag for tag in tags if isinstance(tag, str)}
    warnings: list[str] = []
    unknown = sorted(t for t in found if t.startswith("chat:") and t[5:] not in CHAT_VOCABULARY)
    if unknown:
        warnings.append(f"chat tags outside the core vocabulary: {unknown!r}")
    if "chat:ambient" in found and found & _ADDRESSING:
        warnings.append("chat:ambient together with an addressing tag")
    return warnings


def umbrella_problems(tags: Any) -> list[str]:
    """S-19: the umbrella core tags are emitted with the specific ones (§16.3)."""
    if not isinstance(tags, list):
        return []
    found = {tag for tag in tags if isinstance(tag, str)}
    problems = [
        f"{tag} without {umbrella}"
        for tag, umbrella in _UMBRELLA.items()
        if tag in found and umbrella not in found
    ]
    if "chat:dm" in found and not {"chat:addressed", "chat:private"} <= found:
        problems.append("chat:dm without chat:addressed and chat:private")
    return problems


def manifest_changed_problems(params: Any) -> list[str]:
    """S-40, S-43: exactly ``{revision, domains}``, domains a non-empty subset of the enum."""
    if not isinstance(params, dict):
        return ["mcpl/manifestChanged params are not an object"]
    problems: list[str] = []
    extra = sorted(set(params) - {"revision", "domains"})
    if extra:
        problems.append(f"mcpl/manifestChanged carries extra members {extra!r}")
    revision = params.get("revision")
    if not isinstance(revision, str) or not REVISION.match(revision):
        problems.append(f"mcpl/manifestChanged revision {revision!r} is malformed")
    domains = params.get("domains")
    if not isinstance(domains, list) or not domains:
        problems.append("mcpl/manifestChanged domains is not a non-empty array")
    elif any(d not in DOMAINS for d in domains) or len(set(domains)) != len(domains):
        problems.append(f"mcpl/manifestChanged domains {domains!r} are not a subset of {DOMAINS}")
    return problems


def _without_ontology(feature_sets: Any) -> Any:
    if not isinstance(feature_sets, dict):
        return feature_sets
    return {
        name: {k: v for k, v in entry.items() if k != "tagOntology"}
        if isinstance(entry, dict)
        else entry
        for name, entry in feature_sets.items()
    }


def _ontologies(manifest: Mapping[str, Any]) -> Any:
    feature_sets = manifest.get("featureSets", _ABSENT)
    if not isinstance(feature_sets, dict):
        return feature_sets
    return {
        name: entry.get("tagOntology", _ABSENT) if isinstance(entry, dict) else _ABSENT
        for name, entry in feature_sets.items()
    }


_ABSENT: Final = "\x00absent"


def change_domains(old: Mapping[str, Any], new: Mapping[str, Any]) -> set[str]:
    """The §17 domains that differ between two manifests (absent and empty are distinct)."""
    skip = {"version", "revision", "featureSets"}
    domains: set[str] = set()
    if {k: v for k, v in old.items() if k not in skip} != {
        k: v for k, v in new.items() if k not in skip
    }:
        domains.add("capabilities")
    old_sets, new_sets = old.get("featureSets", _ABSENT), new.get("featureSets", _ABSENT)
    if _without_ontology(old_sets) != _without_ontology(new_sets):
        domains.add("featureSets")
    if _ontologies(old) != _ontologies(new):
        domains.add("tagOntology")
    return domains


def injection_problems(result: Any) -> list[str]:
    """S-23: ``{featureSet, contextInjections:[{namespace, position, content}]}``."""
    if not isinstance(result, dict):
        return ["the context/beforeInference answer is not an object"]
    problems: list[str] = []
    if not isinstance(result.get("featureSet"), str):
        problems.append("the context/beforeInference answer has no featureSet")
    injections = result.get("contextInjections")
    if not isinstance(injections, list):
        return [*problems, "contextInjections is not an array"]
    for injection in injections:
        if not isinstance(injection, dict):
            problems.append(f"injection {injection!r} is not an object")
            continue
        if not isinstance(injection.get("namespace"), str):
            problems.append(f"injection {injection!r} has no namespace")
        if injection.get("position") not in POSITIONS:
            problems.append(f"injection position {injection.get('position')!r} is not valid")
        content = injection.get("content")
        if not isinstance(content, str):
            try:
                content_adapter.validate_python(content)
            except ValidationError:
                problems.append(f"injection content {content!r} is neither text nor blocks")
    return problems
