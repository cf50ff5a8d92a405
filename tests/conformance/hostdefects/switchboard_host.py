"""Switchboard as the host under test: ``python -m tests.conformance.hostdefects.switchboard_host``.

Not a defect: the reference host the suite must pass. It writes a one-connector config to a
temporary directory (``agent.transport = "none"``, no restarts, the connector command being
the argv it was given) and runs Switchboard on it.

By default the host runs in this process: ``Switchboard.started(config)``, which is what
``switchboard run`` does minus the agent-facing MCP server (with ``agent.transport = "none"``
that server serves nothing, and importing it costs about a second per check). ``--full`` as
the first argument runs ``python -m switchboard run --config FILE`` instead, exactly as an
operator would. ``--url URL`` (the kit's ``{url}``) makes the connector one Switchboard dials
over TCP instead of one it spawns.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import tempfile
from pathlib import Path
from types import FrameType


def write_config(directory: Path, connector: list[str]) -> Path:
    """A Switchboard config at ``directory`` with one connector spawned by ``connector``, or
    dialled at the URL ``connector[1]`` when ``connector`` is ``["--url", URL]``."""
    reach = (
        f"url = {json.dumps(connector[1])}"
        if connector[:1] == ["--url"]
        else f"command = {json.dumps(connector)}"
    )
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
                reach,
                "restart = false",
                "",
            ]
        ),
        encoding="utf-8",
    )
    return path


def run_in_process(config_path: Path) -> int:
    """Run the host on ``config_path`` until the kit ends this process."""
    import anyio

    from switchboard.app.board import Switchboard
    from switchboard.config import load_config
    from switchboard.runtime.logs import configure

    config = load_config(config_path)
    configure(config.log_level)

    async def serve() -> None:
        async with Switchboard.started(config):
            await anyio.sleep_forever()

    anyio.run(serve)
    return 0


def _exit_on_sigterm(signum: int, frame: FrameType | None) -> None:
    raise SystemExit(0)  # unwinds, so the temporary directory is removed


def main(argv: list[str]) -> int:
    full = argv[:1] == ["--full"]
    connector = argv[1:] if full else argv
    signal.signal(signal.SIGTERM, _exit_on_sigterm)
    with tempfile.TemporaryDirectory(prefix="switchboard-host-") as tmp:
        config = write_config(Path(tmp), connector)
        if full:
            command = [sys.executable, "-m", "switchboard", "run", "--config", str(config)]
            return subprocess.call(command)
        return run_in_process(config)


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
