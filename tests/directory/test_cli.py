"""``switchboard agents list|show|remove|prune|export|import`` as real subprocesses."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from switchboard.directory import Directory

from .conftest import FakeClock


def _run(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "switchboard", "agents", *args],
        capture_output=True,
        text=True,
        input=stdin,
        timeout=60,
        check=False,
    )


def _config(tmp_path: Path) -> tuple[str, Path]:
    store = tmp_path / "store.sqlite"
    config = tmp_path / "switchboard.toml"
    config.write_text(f'[store]\npath = "{store}"\n')
    return str(config), store


def _seed(store: Path, clock: FakeClock | None = None) -> None:
    with Directory.open(store, clock=clock or FakeClock()) as directory:
        directory.claim("@alice", token="alice-secret", tags=["resident"], holder="@alice")
        directory.register("@old", ttl=1)
        directory.register("weather", capability="forecasts", tags=["public"])


def test_list_prints_a_table_with_headings_like_status_and_the_total(tmp_path: Path) -> None:
    config, store = _config(tmp_path)
    _seed(store)
    done = _run("list", "--config", config)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].split() == ["address", "kind", "state", "holder", "tags", "description"]
    assert set(lines[1]) == {"-", " "}
    assert [line.split()[0] for line in lines[2:-1]] == ["@alice", "@old", "weather"]
    assert "\t" not in done.stdout
    weather = lines[4]
    assert weather.index("service") == lines[0].index("kind")  # columns line up
    assert "public" in weather
    assert lines[-1] == "1-3 of 3 entries"
    assert "alice-secret" not in done.stdout


def test_list_as_json_filters_and_pages_and_never_shows_tokens(tmp_path: Path) -> None:
    config, store = _config(tmp_path)
    _seed(store)
    done = _run("list", "--config", config, "--kind", "agent", "--limit", "1", "--json")
    assert done.returncode == 0, done.stderr
    page = json.loads(done.stdout)
    assert [e["address"] for e in page["entries"]] == ["@alice"]
    assert page["total"] == 2
    assert page["entries"][0]["held"] is True
    assert "secret" not in done.stdout
    assert "sha256" not in done.stdout
    found = json.loads(_run("list", "--config", config, "--search", "FORE", "--json").stdout)
    assert [e["address"] for e in found["entries"]] == ["weather"]


def test_show_prints_an_entry_and_an_unknown_one_fails_with_its_error_name(
    tmp_path: Path,
) -> None:
    config, store = _config(tmp_path)
    _seed(store)
    shown = _run("show", "--config", config, "weather")
    assert shown.returncode == 0, shown.stderr
    assert json.loads(shown.stdout)["capability"] == "forecasts"
    missing = _run("show", "--config", config, "@ghost")
    assert missing.returncode == 1
    assert "[not_found, code 1]" in missing.stderr
    bad = _run("show", "--config", config, "@Ghost")
    assert bad.returncode == 1
    assert "invalid_name" in bad.stderr


def test_remove_takes_out_even_a_held_entry(tmp_path: Path) -> None:
    config, store = _config(tmp_path)
    _seed(store)
    done = _run("remove", "--config", config, "@alice")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "removed @alice"
    with Directory.open(store) as directory:
        assert [e.address for e in directory.list().entries] == ["@old", "weather"]


def test_prune_removes_agents_past_their_ttl_and_keeps_services(tmp_path: Path) -> None:
    config, store = _config(tmp_path)
    _seed(store, FakeClock(now=1000.0))  # long ago, by the real clock the CLI uses
    done = _run("prune", "--config", config)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["pruned @old", "1 pruned"]
    done = _run("prune", "--config", config, "--ttl", "60")
    assert done.stdout.splitlines() == ["pruned @alice", "1 pruned"]
    with Directory.open(store) as directory:
        assert [e.address for e in directory.list().entries] == ["weather"]


def test_export_then_import_into_another_store_skips_what_is_already_there(
    tmp_path: Path,
) -> None:
    config, store = _config(tmp_path)
    _seed(store)
    snapshot = tmp_path / "snap.json"
    done = _run("export", "--config", config, str(snapshot))
    assert done.returncode == 0, done.stderr
    assert "alice-secret" not in snapshot.read_text()
    other_dir = tmp_path / "other"
    other_dir.mkdir()
    other_config, other_store = _config(other_dir)
    with Directory.open(other_store) as directory:
        directory.register("weather", description="already here")
    done = _run("import", "--config", other_config, str(snapshot))
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "skipped weather (already present)",
        "2 imported, 1 skipped",
    ]
    with Directory.open(other_store) as directory:
        assert directory.lookup("weather").description == "already here"
        assert directory.claim("@alice", token="alice-secret").outcome == "refreshed"


def test_importing_a_file_that_is_not_a_snapshot_fails_and_changes_nothing(
    tmp_path: Path,
) -> None:
    config, store = _config(tmp_path)
    _seed(store)
    done = _run("import", "--config", config, "-", stdin="{not json")
    assert done.returncode == 1
    assert "invalid_snapshot" in done.stderr
    done = _run("import", "--config", config, str(tmp_path / "missing.json"))
    assert done.returncode == 1
    assert "cannot read snapshot" in done.stderr
    with Directory.open(store) as directory:
        assert directory.list().total == 3


def test_a_missing_config_file_exits_2(tmp_path: Path) -> None:
    done = _run("list", "--config", str(tmp_path / "nope.toml"))
    assert done.returncode == 2
    assert "does not exist" in done.stderr
