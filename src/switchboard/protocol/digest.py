"""The §17.2 manifest revision digest: canonical bytes and ``sha256:`` value of a manifest.

``"sha256:" + base64url_unpadded(SHA-256(JCS(manifest minus root revision)))``, with set
semantics in exactly the three places §17.2 names and the identifier charset checked
(mcpl-protocol.md 3.15, 6). JCS is the ``rfc8785`` package. A digest never gates acceptance of
a manifest.

What it deliberately does not know: whether a manifest is valid (:mod:`.featuresets`,
:mod:`.manifest`), change domains, or any wire method.
"""

from __future__ import annotations

import base64
import hashlib
import math
import re
from collections.abc import Callable, Iterable
from typing import Any, Final, Literal

import rfc8785

from .errors import ProtocolError

__all__ = [
    "IDENTIFIER_PATTERN",
    "DigestError",
    "DigestErrorCode",
    "canonical_manifest_bytes",
    "is_identifier",
    "manifest_digest",
    "set_order",
]

DigestErrorCode = Literal["identifier_charset", "manifest_not_object", "non_finite_number"]

IDENTIFIER_PATTERN: Final = re.compile(r"[A-Za-z0-9._:*-]+")

_ROOT_NON_CAPABILITY: Final = frozenset({"version", "revision", "featureSets"})
_MATCHER_KEYS: Final = frozenset({"tagsAny", "tagsAll", "tagsNone"})
_MAX_SAFE_INTEGER: Final = 2**53 - 1


class DigestError(ProtocolError, ValueError):
    """The manifest has no §17.2 digest.

    Attributes:
        code: why: ``identifier_charset``, ``manifest_not_object`` or ``non_finite_number``.
        detail: where the offending value sits (a dotted path), for diagnostics only.
    """

    def __init__(self, code: DigestErrorCode, detail: str) -> None:
        super().__init__(f"{code}: {detail}")
        self.code: DigestErrorCode = code
        self.detail = detail


def is_identifier(value: str) -> bool:
    """Whether ``value`` is a non-empty string of ``[A-Za-z0-9._:*-]`` only."""
    return IDENTIFIER_PATTERN.fullmatch(value) is not None


def set_order(values: Iterable[str]) -> list[str]:
    """Dedupe ``values`` and sort them ascending by their UTF-8 bytes (§17.2 set semantics).

    Lone surrogates are encoded with ``surrogatepass`` so that the order is total.
    """
    return sorted(set(values), key=lambda item: item.encode("utf-8", "surrogatepass"))


def canonical_manifest_bytes(manifest: Any) -> bytes:
    """The JCS bytes that :func:`manifest_digest` hashes.

    Raises:
        DigestError: for the three refusals in the module docstring.
    """
    if not isinstance(manifest, dict):
        raise DigestError("manifest_not_object", type(manifest).__name__)
    prepared: dict[str, Any] = {}
    for key, value in manifest.items():
        _require_str_key(key, "")
        if key == "revision":
            continue
        if key == "featureSets":
            prepared[key] = _feature_sets(value, key)
        elif key == "version":
            prepared[key] = _plain(value, key)
        else:
            _check_identifier(key, key)
            prepared[key] = _capability_tree(value, key)
    return rfc8785.dumps(prepared)


def manifest_digest(manifest: Any) -> str:
    """The §17.2 revision of ``manifest``: ``"sha256:"`` + unpadded base64url of SHA-256.

    What it knows (mcpl-protocol.md 3.15 and 6; SPEC §17.2):

    - the formula ``"sha256:" + base64url_unpadded(SHA-256(JCS(manifest minus root revision)))``;
    - only the root ``revision`` member is stripped; ``version``, ``false`` and ``null`` stay;
    - set semantics (dedupe, then ascending UTF-8 byte order) apply to exactly three places, and
      only when ``featureSets`` is an object and the array holds nothing but strings:
      ``featureSets.<set>.uses``, ``featureSets.<set>.tagOntology.coreTags`` and
      ``featureSets.<set>.tagOntology.tags.<tag>.implies``; every other array keeps its order;
    - the identifier positions listed in §17.2 (capability member names at every depth, feature-set
      names, ``uses``, ``coreTags``, ``tags`` keys, ``implies``, ``keyed`` keys and ``values``,
      ``suggestedTreatment`` rule matchers) and their charset ``[A-Za-z0-9._:*-]``, non-empty;
    - totality: any wrong-typed or wrong-shaped value is hashed verbatim, and an identifier array
      holding a non-string is neither sorted nor checked.

    Refusals, as :class:`DigestError` with a ``code``:

    - ``identifier_charset``: an identifier position holds an empty string or a character outside
      the charset (the only refusal §17.2 defines);
    - ``manifest_not_object``: the input is not a JSON object;
    - ``non_finite_number``: NaN or ±Infinity in in-memory input, or an integer too large to become
      an IEEE-754 double (JSON would read it as Infinity).

    Choices the spec leaves open: a ``facet`` string is free text here (§17.2 does not list it; the
    published vector file does, without a vector that exercises it), and ``suggestedTreatment``
    matchers are checked inside the rule list, its conforming shape. Integers beyond ±(2^53−1) are
    converted to ``float`` before JCS, as a JSON parser reading them would.

    JCS itself is the ``rfc8785`` package. Input that is not JSON-shaped at all (non-string object
    keys, types other than dict/list/tuple/str/int/float/bool/None) raises :class:`TypeError`;
    strings with lone surrogates raise ``rfc8785.CanonicalizationError`` (a ``ValueError``).

    Raises:
        DigestError: for the three refusals in the module docstring.
    """
    hashed = hashlib.sha256(canonical_manifest_bytes(manifest)).digest()
    return "sha256:" + base64.urlsafe_b64encode(hashed).rstrip(b"=").decode("ascii")


# --- the walk: each helper returns a JSON-ready copy and raises on refusal ----------------


def _plain(value: Any, where: str) -> Any:
    """A copy of any JSON value with no identifier checks and every array kept in order."""
    return _copy(value, where, check_keys=False)


def _capability_tree(value: Any, where: str) -> Any:
    """A copy of a capability member's value: member names are identifiers at every depth."""
    return _copy(value, where, check_keys=True)


def _copy(value: Any, where: str, *, check_keys: bool) -> Any:
    if isinstance(value, dict):
        copied: dict[str, Any] = {}
        for key, item in value.items():
            _require_str_key(key, where)
            path = f"{where}.{key}"
            if check_keys:
                _check_identifier(key, path)
            copied[key] = _copy(item, path, check_keys=check_keys)
        return copied
    if isinstance(value, list | tuple):
        return [_copy(item, f"{where}[{i}]", check_keys=check_keys) for i, item in enumerate(value)]
    return _scalar(value, where)


def _scalar(value: Any, where: str) -> Any:
    if value is None or isinstance(value, bool | str):
        return value
    if isinstance(value, int):
        if -_MAX_SAFE_INTEGER <= value <= _MAX_SAFE_INTEGER:
            return value
        try:
            return float(value)
        except OverflowError:
            raise DigestError("non_finite_number", where) from None
    if isinstance(value, float):
        if not math.isfinite(value):
            raise DigestError("non_finite_number", where)
        return value
    raise TypeError(f"not a JSON value at {where or 'the root'}: {type(value).__name__}")


def _require_str_key(key: object, where: str) -> None:
    if not isinstance(key, str):
        raise TypeError(f"object member name at {where or 'the root'} is not a string: {key!r}")


def _check_identifier(value: str, where: str) -> None:
    if not is_identifier(value):
        raise DigestError("identifier_charset", f"{where} = {value!r}")


def _identifier_list(value: Any, where: str, *, as_set: bool) -> Any:
    """An identifier array: checked (and set-normalized) only when it holds only strings."""
    if isinstance(value, list | tuple) and all(isinstance(item, str) for item in value):
        for i, item in enumerate(value):
            _check_identifier(item, f"{where}[{i}]")
        return set_order(value) if as_set else list(value)
    return _plain(value, where)


def _keyed_members(
    value: Any,
    where: str,
    member: Callable[[str, Any, str], Any],
    *,
    check_names: bool,
) -> Any:
    """A copy of an object whose members are shaped by ``member``; non-objects are verbatim."""
    if not isinstance(value, dict):
        return _plain(value, where)
    copied: dict[str, Any] = {}
    for key, item in value.items():
        _require_str_key(key, where)
        path = f"{where}.{key}"
        if check_names:
            _check_identifier(key, path)
        copied[key] = member(key, item, path)
    return copied


def _feature_sets(value: Any, where: str) -> Any:
    # Only the object-keyed shape gets set semantics; an array of sets is hashed verbatim.
    return _keyed_members(value, where, _feature_set, check_names=True)


def _feature_set(_name: str, value: Any, where: str) -> Any:
    return _keyed_members(value, where, _feature_set_member, check_names=False)


def _feature_set_member(key: str, value: Any, where: str) -> Any:
    if key == "uses":
        return _identifier_list(value, where, as_set=True)
    if key == "tagOntology":
        return _keyed_members(value, where, _ontology_member, check_names=False)
    return _plain(value, where)


def _ontology_member(key: str, value: Any, where: str) -> Any:
    if key == "coreTags":
        return _identifier_list(value, where, as_set=True)
    if key == "tags":
        return _keyed_members(value, where, _tag, check_names=True)
    if key == "keyed":
        return _keyed_members(value, where, _keyed_dimension, check_names=True)
    if key == "suggestedTreatment":
        return _rules(value, where)
    return _plain(value, where)


def _tag(_name: str, value: Any, where: str) -> Any:
    return _keyed_members(value, where, _tag_member, check_names=False)


def _tag_member(key: str, value: Any, where: str) -> Any:
    if key == "implies":
        return _identifier_list(value, where, as_set=True)
    return _plain(value, where)


def _keyed_dimension(_name: str, value: Any, where: str) -> Any:
    return _keyed_members(value, where, _keyed_member, check_names=False)


def _keyed_member(key: str, value: Any, where: str) -> Any:
    if key == "values":
        return _identifier_list(value, where, as_set=False)
    return _plain(value, where)


def _rules(value: Any, where: str) -> Any:
    """``suggestedTreatment``: an ordered list of rules whose matchers are identifier lists."""
    if not isinstance(value, list | tuple):
        return _plain(value, where)
    return [
        _keyed_members(rule, f"{where}[{i}]", _rule_member, check_names=False)
        for i, rule in enumerate(value)
    ]


def _rule_member(key: str, value: Any, where: str) -> Any:
    if key in _MATCHER_KEYS:
        return _identifier_list(value, where, as_set=False)
    return _plain(value, where)
