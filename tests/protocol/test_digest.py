"""The §17.2 digest against the spec's worked example and Switchboard's own vectors.

The vectors are data (tests/conformance/data/), never transcribed here. ``CHECKS`` maps the
catalogue's ``library.digest.*`` check ids to the test functions that provide them.
"""

from __future__ import annotations

import base64
import hashlib
import json
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any, Final

import pytest

from switchboard.protocol.digest import (
    DigestError,
    canonical_manifest_bytes,
    is_identifier,
    manifest_digest,
    set_order,
)

DATA_DIR: Final = Path(__file__).resolve().parents[1] / "conformance" / "data"
WORKED_EXAMPLE: Final = DATA_DIR / "spec-17-2-worked-example.json"
OWN_VECTORS: Final = DATA_DIR / "digest-vectors.json"


def _load_own_vectors() -> list[dict[str, Any]]:
    vectors: list[dict[str, Any]] = json.loads(OWN_VECTORS.read_text(encoding="utf-8"))["vectors"]
    for vector in vectors:
        override = vector.get("nonFinite")
        if override is not None:
            target: Any = vector["input"]
            *parents, last = override["path"]
            for step in parents:
                target = target[step]
            target[last] = float(override["value"])
    return vectors


VECTORS: Final = _load_own_vectors()
BY_NAME: Final = {vector["name"]: vector for vector in VECTORS}
POSITIVE: Final = [v for v in VECTORS if "digest" in v]
NEGATIVE: Final = [v for v in VECTORS if "expectError" in v]


def test_the_spec_17_2_worked_example_reproduces_byte_for_byte() -> None:
    example = json.loads(WORKED_EXAMPLE.read_text(encoding="utf-8"))
    canonical = canonical_manifest_bytes(example["manifest"])
    assert canonical == example["canonicalJson"].encode("utf-8")
    assert manifest_digest(example["manifest"]) == example["revision"]


def test_the_worked_example_needs_both_member_sorting_and_set_sorting() -> None:
    example = json.loads(WORKED_EXAMPLE.read_text(encoding="utf-8"))
    unsorted_uses = json.dumps(example["manifest"], sort_keys=True, separators=(",", ":"))
    assert unsorted_uses.encode() != canonical_manifest_bytes(example["manifest"])


def test_a_root_revision_never_influences_the_worked_example_digest() -> None:
    example = json.loads(WORKED_EXAMPLE.read_text(encoding="utf-8"))
    with_revision = {"revision": "sha256:not-the-digest", **example["manifest"]}
    assert manifest_digest(with_revision) == example["revision"]


def test_the_own_vector_file_is_consistent_with_its_canonical_strings() -> None:
    assert len(VECTORS) == len(BY_NAME)
    for vector in POSITIVE:
        hashed = hashlib.sha256(vector["canonicalJson"].encode("utf-8")).digest()
        encoded = base64.urlsafe_b64encode(hashed).rstrip(b"=").decode("ascii")
        assert vector["digest"] == f"sha256:{encoded}", vector["name"]
        assert "expectError" not in vector


@pytest.mark.parametrize("vector", POSITIVE, ids=lambda v: v["name"])
def test_each_own_positive_vector_gives_its_canonical_bytes_and_digest(
    vector: dict[str, Any],
) -> None:
    assert canonical_manifest_bytes(vector["input"]) == vector["canonicalJson"].encode("utf-8")
    assert manifest_digest(vector["input"]) == vector["digest"]


@pytest.mark.parametrize("vector", NEGATIVE, ids=lambda v: v["name"])
def test_each_own_negative_vector_is_refused_with_its_code(vector: dict[str, Any]) -> None:
    with pytest.raises(DigestError) as caught:
        manifest_digest(vector["input"])
    assert caught.value.code == vector["expectError"]


def test_the_same_and_different_digest_assertions_between_own_vectors_hold() -> None:
    asserted = 0
    for vector in POSITIVE:
        if "sameDigestAs" in vector:
            assert vector["digest"] == BY_NAME[vector["sameDigestAs"]]["digest"], vector["name"]
            asserted += 1
        if "differentDigestFrom" in vector:
            other = BY_NAME[vector["differentDigestFrom"]]
            assert vector["digest"] != other["digest"], vector["name"]
            asserted += 1
    assert asserted >= 5


def test_input_that_is_not_an_object_or_holds_a_non_finite_number_is_refused() -> None:
    not_objects: tuple[object, ...] = ([], (), "{}", None, 0, 1.5, True, b"{}")
    for not_an_object in not_objects:
        with pytest.raises(DigestError) as caught:
            manifest_digest(not_an_object)
        assert caught.value.code == "manifest_not_object"
    for bad in (math.nan, math.inf, -math.inf, 10**400, -(10**400)):
        with pytest.raises(DigestError) as caught:
            manifest_digest({"version": "0.5", "demo": {"limits": [1, bad]}})
        assert caught.value.code == "non_finite_number"
        assert caught.value.detail == "demo.limits[1]"


def test_a_digest_error_is_a_value_error_that_names_code_and_place() -> None:
    with pytest.raises(ValueError, match=r"identifier_charset: featureSets\.f\.uses\[0\]"):
        manifest_digest({"featureSets": {"f": {"uses": ["bad entry"]}}})


def test_the_digest_has_the_sha256_prefix_and_43_base64url_characters() -> None:
    digest = manifest_digest({"version": "0.5"})
    assert digest.startswith("sha256:")
    body = digest.removeprefix("sha256:")
    assert len(body) == 43
    assert set(body) <= set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")


def test_the_digest_leaves_the_callers_manifest_untouched() -> None:
    manifest = {"revision": "r", "featureSets": {"f": {"uses": ["tools", "a", "tools"]}}}
    before = json.dumps(manifest)
    manifest_digest(manifest)
    assert json.dumps(manifest) == before


def test_tuples_digest_like_lists() -> None:
    as_lists = {"featureSets": {"f": {"uses": ["b", "a"]}}, "x": {"y": [1, [2]]}}
    as_tuples = {"featureSets": {"f": {"uses": ("b", "a")}}, "x": {"y": (1, (2,))}}
    assert manifest_digest(as_tuples) == manifest_digest(as_lists)


def test_values_that_are_not_json_are_a_type_error() -> None:
    with pytest.raises(TypeError):
        manifest_digest({"version": {1: "x"}})
    with pytest.raises(TypeError):
        manifest_digest({"demo": {"when": object()}})


def test_identifiers_are_non_empty_runs_of_the_ascii_charset() -> None:
    assert is_identifier("contextHooks.beforeInference.inject.*")
    assert is_identifier("chat:from-bot_2")
    for bad in ("", " ", "a b", "a/b", "tools\n", "caf\u00e9", "x\u200b"):
        assert not is_identifier(bad), repr(bad)


def test_set_order_dedupes_and_sorts_by_utf8_bytes_not_utf16_units() -> None:
    # U+FFFD is EF BF BD in UTF-8 and U+10000 is F0 90 80 80; UTF-16 would reverse them.
    assert set_order(["\U00010000", "\ufffd", "b", "B", "b"]) == ["B", "b", "\ufffd", "\U00010000"]


CHECKS: Final[dict[str, Callable[..., object]]] = {
    "library.digest.spec_worked_example": (
        test_the_spec_17_2_worked_example_reproduces_byte_for_byte
    ),
    "library.digest.refusals": (
        test_input_that_is_not_an_object_or_holds_a_non_finite_number_is_refused
    ),
}
