"""The default install never needs the cluster extra: importing Switchboard and running it on
its SQLite file loads neither the PostgreSQL nor the NATS client."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

SCRIPT = textwrap.dedent(
    """
    import sys

    import anyio

    import switchboard
    import switchboard.cli
    from switchboard.app.board import Switchboard
    from switchboard.config import Config, StoreConfig

    async def main() -> None:
        config = Config(store=StoreConfig(path=sys.argv[1]))
        async with Switchboard.started(config) as board:
            await board.store.append([])

    anyio.run(main)
    loaded = sorted(
        name for name in sys.modules
        if name.split(".")[0] in ("psycopg", "psycopg_pool", "nats")
        or name.startswith("switchboard.cluster")
    )
    print('LOADED', loaded)
    """
)


def test_running_on_sqlite_imports_neither_the_postgresql_nor_the_nats_client(
    tmp_path: Path,
) -> None:
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(tmp_path / "s.sqlite")],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    [line] = [x for x in done.stdout.splitlines() if x.startswith("LOADED ")]
    assert line == "LOADED []"
    assert (tmp_path / "s.sqlite").exists()
