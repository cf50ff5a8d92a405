"""The §17.2 digest against the vectors the spec repository publishes (D-01, D-02, D-03).

The published file (``conformance/manifest-digest-vectors.json`` in anima-research/mcpl) is
not part of this repository. These tests read it, as data, from the path in the environment
variable ``SWITCHBOARD_MCPL_DIGEST_VECTORS``, or else from
``../shared/mcpl/manifest-digest-vectors.json`` beside the checkout, and skip when neither
exists. ``CHECKS`` maps catalogue check ids to the test functions that provide them.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any, Final

import pytest

from switchboard.protocol.digest import DigestError, canonical_manifest_bytes, manifest_digest
from switchboard.protocol.digest import set_order as utf8_set_order

ENV_VAR: Final = "SWITCHBOARD_MCPL_DIGEST_VECTORS"
BESIDE_CHECKOUT: Final = (
    Path(__file__).resolve().parents[2].parent / "shared" / "mcpl" / "manifest-digest-vectors.json"
)


def _vector_file() -> Path | None:
    configured = os.environ.get(ENV_VAR)
    if configured:
        return Path(configured)
    return BESIDE_CHECKOUT if BESIDE_CHECKOUT.is_file() else None


@pytest.fixture(scope="module")
def published() -> dict[str, Any]:
    path = _vector_file()
    if path is None:
        pytest.skip(f"published digest vectors not present (set {ENV_VAR})")
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return data


def test_every_published_positive_vector_reproduces(published: dict[str, Any]) -> None:
    positive = [v for v in published["vectors"] if "digest" in v]
    assert positive, "the published file has no positive vectors"
    digests: dict[str, str] = {}
    failures: list[str] = []
    for vector in positive:
        name = vector["name"]
        canonical = canonical_manifest_bytes(vector["input"])
        if canonical != vector["canonicalJson"].encode("utf-8"):
            failures.append(f"{name}: canonical JSON differs")
        if hashlib.sha256(canonical).hexdigest() != vector["sha256Hex"]:
            failures.append(f"{name}: SHA-256 hex differs")
        digests[name] = manifest_digest(vector["input"])
        if digests[name] != vector["digest"]:
            failures.append(f"{name}: digest differs")
    for vector in positive:
        name = vector["name"]
        if "sameDigestAs" in vector and digests[name] != digests[vector["sameDigestAs"]]:
            failures.append(f"{name}: should equal {vector['sameDigestAs']}")
        other = vector.get("differentDigestFrom")
        if other is not None and digests[name] == digests[other]:
            failures.append(f"{name}: should differ from {other}")
    assert not failures, failures


def test_every_published_negative_vector_is_refused_with_its_code(
    published: dict[str, Any],
) -> None:
    negative = [v for v in published["vectors"] if "expectError" in v]
    assert negative, "the published file has no negative vectors"
    failures: list[str] = []
    for vector in negative:
        try:
            digest = manifest_digest(vector["input"])
        except DigestError as exc:
            if exc.code != vector["expectError"]:
                failures.append(f"{vector['name']}: refused with {exc.code}")
        else:
            failures.append(f"{vector['name']}: digested to {digest}")
    assert not failures, failures


def test_the_set_order_agrees_with_every_published_sort_vector(
    published: dict[str, Any],
) -> None:
    sort_vectors = published["sortVectors"]
    assert sort_vectors, "the published file has no sort vectors"
    failures = [v["name"] for v in sort_vectors if utf8_set_order(v["input"]) != v["sorted"]]
    assert not failures, failures


CHECKS: Final[dict[str, Callable[..., object]]] = {
    "library.digest.published_positive_vectors": test_every_published_positive_vector_reproduces,
    "library.digest.published_negative_vectors": (
        test_every_published_negative_vector_is_refused_with_its_code
    ),
    "library.digest.published_sort_vectors": (
        test_the_set_order_agrees_with_every_published_sort_vector
    ),
}
