"""Snapshots: a JSON round trip, imports that skip present addresses, bad files that change
nothing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from switchboard.directory import (
    Directory,
    HeldByAnotherOwner,
    InvalidSnapshot,
    export_snapshot,
    import_snapshot,
)

from .conftest import FakeClock


def test_a_snapshot_round_trips_every_entry_and_keeps_held_addresses_held(
    tmp_path: Path, directory: Directory
) -> None:
    directory.claim("@held", token="secret", tags=["t"], metadata={"n": [1, 2]}, ttl=30)
    directory.register("weather", capability="forecasts", description="rain or not")
    document = json.loads(json.dumps(export_snapshot(directory, exported_at=0.0)))
    assert "secret" not in json.dumps(document)
    with Directory.open(tmp_path / "other.sqlite", clock=FakeClock()) as other:
        assert import_snapshot(other, document) == (["@held", "weather"], [])
        for address in ("@held", "weather"):
            before, after = directory.lookup(address), other.lookup(address)
            assert after.to_public() | {"online": False} == before.to_public() | {"online": False}
        assert other.claim("@held", token="secret").outcome == "refreshed"
        with pytest.raises(HeldByAnotherOwner):
            other.claim("@held", token="wrong")


def test_an_import_skips_addresses_already_present_and_leaves_them_untouched(
    tmp_path: Path, directory: Directory
) -> None:
    directory.register("@a", description="from the snapshot")
    directory.register("@b")
    document = export_snapshot(directory, exported_at=0.0)
    with Directory.open(tmp_path / "other.sqlite", clock=FakeClock()) as other:
        other.register("@a", description="already here")
        assert import_snapshot(other, document) == (["@b"], ["@a"])
        assert other.lookup("@a").description == "already here"


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda d: d.update(format="other"), "not a directory snapshot"),
        (lambda d: d.update(version=2), "version 2"),
        (lambda d: d["entries"][1].update(address="@Bad"), "entries\\[1\\]"),
        (lambda d: d["entries"][1].pop("tags"), "lacks tags"),
        (lambda d: d["entries"].append(dict(d["entries"][0])), "appears twice"),
    ],
)
def test_a_bad_snapshot_is_refused_and_imports_nothing(
    tmp_path: Path, directory: Directory, change: object, message: str
) -> None:
    directory.register("@a")
    directory.register("@b")
    document = json.loads(json.dumps(export_snapshot(directory, exported_at=0.0)))
    assert callable(change)
    change(document)
    with Directory.open(tmp_path / "other.sqlite", clock=FakeClock()) as other:
        with pytest.raises(InvalidSnapshot, match=message):
            import_snapshot(other, document)
        assert other.list().total == 0
