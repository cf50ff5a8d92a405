"""No secret reaches the log, in either format, on any path (issue #26, item 1).

``switchboard run`` runs as a real process (tests/integration/loaded_host.py) with every kind
of secret an operator gives it, each passed through its environment as a ``${VARIABLE}``: two
agents' bearer tokens, the status surface's operator token, and a connector ``env`` secret on
each of three connectors. In one run, in the console format and again with ``--log-json``:

- a connector streams messages with requests in flight, and the host is stopped with SIGTERM
  while an agent's long poll is open over streamable HTTP (a shutdown under load);
- requests are refused: a wrong bearer token, none, a Host the endpoint does not answer to,
  the status surface without its token;
- connectors fail: one whose program does not exist (stopped for good, an ERROR line) and one
  that answers ``initialize`` with an error and exits;
- a tool crashes: the host runs through a launcher that makes ``channel_list``'s port call
  raise, since no tool crashes on real input (the test holds that the crash was logged, so it
  cannot pass without one).

Every line of both logs is then searched for every secret.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import anyio
import httpx2
import pytest

from tests.integration.loaded_host import (
    SECRETS,
    agent,
    connector_table,
    open_long_poll,
    running,
    write_config,
)

pytestmark = pytest.mark.anyio

CRASHING_TOOL = [
    sys.executable,
    "-c",
    "import sys\n"
    "from switchboard.agents.port.service import AgentService\n"
    "def broken(self):\n"
    "    raise RuntimeError('the channel listing broke')\n"
    "AgentService.channels = broken\n"
    "from switchboard.cli import main\n"
    "sys.exit(main(sys.argv[1:]))\n",
]
"""``python -m switchboard``, but ``channel_list`` crashes (an unexpected exception)."""

BROKEN = """
import json, sys
asked = json.loads(sys.stdin.readline())
error = {"code": -32603, "message": "this connector cannot start"}
sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": asked["id"], "error": error}) + "\\n")
sys.stdout.flush()
sys.exit(3)
"""


def _config(tmp_path: Path) -> Path:
    broken = tmp_path / "broken.py"
    broken.write_text(BROKEN)
    more = connector_table(
        "missing", [str(tmp_path / "no-such-program")], "restart = false\n"
    ) + connector_table("broken", [sys.executable, str(broken)], "restart = false\n")
    return write_config(tmp_path, more=more)


async def _refused_requests(url: str) -> list[int]:
    base = url.rsplit("/", 1)[0]
    initialize = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "t", "version": "0"},
        },
    }
    accept = {"Accept": "application/json, text/event-stream"}
    wrong = "wrong-token-" + SECRETS["BUSY_TOKEN"][::-1]
    async with httpx2.AsyncClient(timeout=30) as http:
        answers = [
            await http.post(url, json=initialize, headers={**accept, "Authorization": wrong}),
            await http.post(url, json=initialize, headers=accept),
            await http.post(
                url,
                json=initialize,
                headers={
                    **accept,
                    "Host": "evil.example",
                    "Authorization": f"Bearer {SECRETS['BUSY_TOKEN']}",
                },
            ),
            await http.get(f"{base}/status"),
            await http.get(f"{base}/status", headers={"Authorization": f"Bearer {wrong}"}),
        ]
    return [a.status_code for a in answers]


async def _one_run(tmp_path: Path, *, json_log: bool) -> str:
    config = _config(tmp_path)
    with anyio.fail_after(120):
        async with running(config, json_log=json_log, launcher=CRASHING_TOOL) as (host, group):
            await host.until("connector_stopped")
            await host.until("this connector cannot start")
            assert await _refused_requests(host.url) == [401, 401, 421, 401, 401]
            async with agent(host.url, SECRETS["BUSY_TOKEN"]) as busy:
                crashed = await busy.call_tool("channel_list", {})
                read = await busy.call_tool("inbox", {"limit": 5})
            assert crashed.is_error
            assert not read.is_error
            await open_long_poll(group, host.url, SECRETS["IDLE_TOKEN"])
            code, _seconds = await host.stop()
    assert code == 0, host.log[-3000:]
    return host.log


@pytest.mark.parametrize("json_log", [False, True], ids=["console", "json"])
async def test_no_token_or_connector_secret_is_in_any_log_line(
    tmp_path: Path, json_log: bool
) -> None:
    log = await _one_run(tmp_path, json_log=json_log)
    lines = log.splitlines()
    if json_log:
        for line in lines:
            json.loads(line)  # every line parses: a traceback is a field of its line
    # Every path ran: the crash, the refusals, both failures and the shutdown were logged.
    for said in (
        "raised an unexpected exception",
        "agent_http_refused",
        "connector_stopped",
        "this connector cannot start",  # a connector_failed line says what failed
        "shutdown_complete",
    ):
        assert said in log, said
    leaks = {
        name: [n for n, line in enumerate(lines) if secret in line]
        for name, secret in SECRETS.items()
    }
    assert leaks == {name: [] for name in SECRETS}, {
        name: [lines[n][:300] for n in found[:3]] for name, found in leaks.items() if found
    }
