"""Switchboard as the host under test: ``python -m tests.conformance.hostdefects.switchboard_host``.

Not a defect: the reference host the suite must pass. It writes a one-connector config to a
temporary directory (``agent.transport = "none"``, no restarts, the connector command being
the argv it was given) and runs ``python -m switchboard run --config FILE``.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path


def write_config(directory: Path, connector: list[str]) -> Path:
    """A Switchboard config at ``directory`` with one connector spawned by ``connector``."""
    path = directory / "host.toml"
    path.write_text(
        "\n".join(
            [
                'log_level = "WARNING"',
                "[store]",
                f"path = {json.dumps(str(directory / 'store.sqlite'))}",
                "[agent]",
                'transport = "none"',
                "[[connectors]]",
                'id = "kit"',
                f"command = {json.dumps(connector)}",
                "restart = false",
                "",
            ]
        ),
        encoding="utf-8",
    )
    return path


def main(connector: list[str]) -> int:
    with tempfile.TemporaryDirectory(prefix="switchboard-host-") as tmp:
        config = write_config(Path(tmp), connector)
        command = [sys.executable, "-m", "switchboard", "run", "--config", str(config)]
        return subprocess.call(command)


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
