"""The command line on a PostgreSQL store: ``switchboard agents`` lists and removes what the
shared directory holds (not an SQLite file beside the config), and the status names the
database without its password."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from switchboard.app.stores import open_stores
from switchboard.config import StoreConfig
from tests.pg import fresh_database

pytestmark = pytest.mark.anyio


def _agents(config: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "switchboard",
            "agents",
            argv[0],
            "--config",
            str(config),
            *argv[1:],
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


async def test_the_agents_command_manages_the_directory_in_the_database(tmp_path: Path) -> None:
    with fresh_database("sbcli") as url:
        store = StoreConfig(backend="postgres", url=url)
        async with open_stores(store) as stores:
            stores.directory.claim("@ann", token="t" * 32, description="in the database")
        config = tmp_path / "c.toml"
        config.write_text(f'[store]\nbackend = "postgres"\nurl = "{url}"\n')
        listed = _agents(config, "list", "--json")
        assert listed.returncode == 0, listed.stderr
        page = json.loads(listed.stdout)
        assert [e["address"] for e in page["entries"]] == ["@ann"]
        removed = _agents(config, "remove", "@ann")
        assert removed.returncode == 0, removed.stderr
        async with open_stores(store) as stores:
            assert stores.directory.list().total == 0
        assert not (tmp_path / "switchboard.sqlite").exists()


def test_the_store_is_shown_without_its_password() -> None:
    store = StoreConfig(backend="postgres", url="postgresql://sb:hush@db:5432/switchboard")
    assert store.place == "postgresql://sb@db:5432/switchboard"
    assert StoreConfig(path="/var/s.sqlite").place == "/var/s.sqlite"
