"""The status surface over HTTP, against a real ``switchboard run`` (issue #13, item 4).

``switchboard run`` runs as a real subprocess with a real store file and a real stdio connector
(tests/integration/status_connector.py, steered through files). The tests read ``/healthz``,
``/readyz``, ``/status`` and ``/metrics`` over real sockets, kill the connector's process, and
run ``switchboard status`` as an operator would.
"""

from __future__ import annotations

import os
import signal
import socket
import sys
from pathlib import Path

import anyio
import pytest
from prometheus_client.parser import text_string_to_metric_families

from switchboard.config import ConfigError, load_config
from tests.integration.status_support import (
    TOKEN,
    Snapshot,
    connector_of,
    running_host,
    write_config,
)

pytestmark = [pytest.mark.anyio, pytest.mark.slow]


def _connected(snap: Snapshot) -> bool:
    return bool(connector_of(snap)["state"] == "connected" and connector_of(snap)["channels"])


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


async def test_readyz_follows_the_connector_from_connected_to_restarting_and_back(
    tmp_path: Path,
) -> None:
    config = write_config(tmp_path, backoff=4.0)
    async with running_host(config) as host:
        health = await host.client.get("/healthz")
        assert (health.status_code, health.json()) == (200, {"alive": True})
        snap = await host.wait_for(_connected)
        ready = await host.client.get("/readyz")
        assert (ready.status_code, ready.json()) == (200, {"ready": True, "reasons": []})

        os.kill(connector_of(snap)["pid"], signal.SIGKILL)
        await host.wait_for(lambda s: connector_of(s)["state"] == "restarting")
        down = await host.client.get("/readyz")
        assert down.status_code == 503
        assert down.json() == {"ready": False, "reasons": ["connector 'steered' is restarting"]}

        again = await host.wait_for(_connected)
        assert connector_of(again)["restarts"] == 1
        assert connector_of(again)["pid"] != connector_of(snap)["pid"]
        assert (await host.client.get("/readyz")).status_code == 200


async def test_status_shows_the_connector_a_message_that_arrived_and_a_refusal(
    tmp_path: Path,
) -> None:
    async with running_host(write_config(tmp_path)) as host:
        await host.wait_for(_connected)
        host.say("lobby", "ada", "<script>alert(1)</script> hello")
        host.say("nowhere", "eve", "for a channel never registered")
        snap = await host.wait_for(lambda s: s["traffic"]["refusals"] >= 1)
        snap = await host.wait_for(lambda s: s["traffic"]["messages_in"] >= 1)

        row = connector_of(snap)
        assert row["dialect"] == "mcpl-0.5"
        assert row["protocol_version"] == "0.5"
        assert "channels.incoming" in row["grant"]
        assert row["channels"] == 2
        assert row["messages_in"] == 1
        assert row["refusals"] == 1
        assert row["last_refusal"].startswith("channels/incoming: unknown channel")
        assert row["last_refusal_at"] is not None
        assert row["transport"] == "stdio"
        assert isinstance(row["pid"], int)

        assert {(c["id"], c["desired"], c["confirmed"]) for c in snap["channels"]} == {
            ("lobby", "default", "open"),  # nobody decided; traffic proved it open
            ("news", "default", "closed"),
        }
        [said] = snap["recent_traffic"]
        assert said["direction"] == "in"
        assert (said["channel"], said["author"]) == ("lobby", "ada")
        assert said["text"] == "<script>alert(1)</script> hello"
        [refused] = snap["recent_refusals"]
        assert (refused["kind"], refused["method"]) == ("incoming_refused", "channels/incoming")

        store = snap["store"]
        assert store["path"] == str(tmp_path / "store.sqlite")
        assert store["total_bytes"] == store["file_bytes"] + store["wal_bytes"] > 0
        assert store["latest_seq"] == 1
        assert store["write_backlog"] == 0
        assert store["open"] is True
        assert snap["agents"] == [{"handle": "@agent", "sessions": 0, "last_active": None}]


async def test_metrics_parse_as_prometheus_text_and_carry_the_counters(tmp_path: Path) -> None:
    async with running_host(write_config(tmp_path)) as host:
        await host.wait_for(_connected)
        host.say("lobby", "ada", "one")
        host.say("news", "bob", "two")
        await host.wait_for(lambda s: s["traffic"]["messages_in"] >= 2)
        answer = await host.client.get("/metrics")
        assert answer.status_code == 200
        assert answer.headers["content-type"].startswith("text/plain; version=0.0.4")
        samples = {
            (s.name, tuple(sorted(s.labels.items()))): s.value
            for family in text_string_to_metric_families(answer.text)
            for s in family.samples
        }
        steered = (("connector", "steered"),)
        assert samples[("switchboard_messages_received_total", steered)] == 2
        assert samples[("switchboard_connector_up", steered)] == 1
        assert samples[("switchboard_connector_channels", steered)] == 2
        assert samples[("switchboard_connector_restarts_total", steered)] == 0
        assert samples[("switchboard_connector_refusals_total", steered)] == 0
        assert samples[("switchboard_store_latest_seq", ())] == 2
        assert samples[("switchboard_ready", ())] == 1
        assert samples[("switchboard_store_bytes", (("file", "db"),))] > 0


async def test_with_an_operator_token_a_request_without_it_is_refused_with_401(
    tmp_path: Path,
) -> None:
    config = write_config(tmp_path, token=TOKEN)
    async with running_host(config, token=TOKEN) as host:
        assert (await host.client.get("/status")).status_code == 200
        for path in ("/status", "/metrics", "/readyz", "/status/page", "/status/events"):
            bare = await host.client.get(path, headers={"Authorization": ""})
            assert bare.status_code == 401, path
            assert "operator token" in bare.json()["error_description"]
            wrong = await host.client.get(path, headers={"Authorization": "Bearer " + "x" * 33})
            assert wrong.status_code == 401, path
        open_health = await host.client.get("/healthz", headers={"Authorization": ""})
        assert open_health.status_code == 200
        # The page is opened once with ?token=: it keeps the token in an HttpOnly cookie.
        first = await host.client.get(
            "/status/page", params={"token": TOKEN}, headers={"Authorization": ""}
        )
        assert first.status_code == 303
        assert "httponly" in first.headers["set-cookie"].lower()


def test_a_status_listener_beyond_loopback_without_a_token_is_refused_at_load(
    tmp_path: Path,
) -> None:
    path = tmp_path / "switchboard.toml"
    path.write_text('[status]\nhost = "0.0.0.0"\nport = 9100\n')
    with pytest.raises(ConfigError, match=r"not a loopback address.*\[status\]"):
        load_config(path)
    path.write_text(f'[status]\nhost = "0.0.0.0"\nport = 9100\ntoken = "{TOKEN}"\n')
    assert load_config(path).status.port == 9100
    path.write_text('[status]\nhost = "127.0.0.1"\nport = 9100\n')
    assert load_config(path).status.token is None


async def test_the_status_surface_is_served_beside_the_agents_http_endpoint(
    tmp_path: Path,
) -> None:
    config = write_config(tmp_path, status_port=None, agent_http_port=0)
    async with running_host(config) as host:
        await host.wait_for(_connected)
        assert (await host.client.get("/healthz")).status_code == 200
        assert connector_of(await host.status())["state"] == "connected"
        # The agents' endpoint is still there, behind its own checks.
        assert (await host.client.get("/mcp")).status_code != 404
        refused = await host.client.get("/status", headers={"Host": "evil.example"})
        assert refused.status_code == 421


async def test_switchboard_status_prints_tables_and_says_when_nothing_answers(
    tmp_path: Path,
) -> None:
    port = _free_port()
    config = write_config(tmp_path, status_port=port)
    command = [sys.executable, "-m", "switchboard", "status", "--config", str(config)]
    nobody = await anyio.run_process(command, check=False)
    assert nobody.returncode == 1
    assert b"nothing answers at http://127.0.0.1:" in nobody.stderr
    assert b"Traceback" not in nobody.stderr

    async with running_host(config) as host:
        host.say("lobby", "ada", "hi")
        await host.wait_for(lambda s: _connected(s) and s["traffic"]["messages_in"] >= 1)
        shown = await anyio.run_process(command, check=False)
        assert shown.returncode == 0, shown.stderr.decode()
        out = shown.stdout.decode()
        assert out.startswith("Switchboard: ready")
        for heading in ("Connectors", "Agents", "Store", "Traffic"):
            assert f"\n{heading}\n" in out
        [row] = [line for line in out.splitlines() if line.startswith("steered ")]
        assert row.split()[:2] == ["steered", "connected"]
        assert "@agent" in out
        assert str(tmp_path / "store.sqlite") in out


AGENT_TOKEN = "agent-" + "a" * 26


async def test_on_a_token_protected_agents_listener_status_needs_the_operator_token(
    tmp_path: Path,
) -> None:
    """The agents' endpoint needs a bearer token, so /status, the page and its events do too:
    without [status] token they are closed (403 saying what to set), and an agent's token does
    not open them. /healthz stays open."""
    config = write_config(tmp_path, status_port=None, agent_http_port=0, agent_token=AGENT_TOKEN)
    async with running_host(config) as host:
        assert (await host.client.get("/healthz")).status_code == 200
        for path in ("/status", "/status/page", "/status/events", "/metrics", "/readyz"):
            for headers in ({}, {"Authorization": f"Bearer {AGENT_TOKEN}"}):
                closed = await host.client.get(path, headers=headers)
                assert closed.status_code == 403, (path, closed.status_code)
                assert "set token = " in closed.text
                assert "open_beside_agents = true" in closed.text
        assert "status_endpoint_closed" in "".join(host.stderr)


async def test_with_an_operator_token_the_agents_listener_serves_status_to_that_token_only(
    tmp_path: Path,
) -> None:
    config = write_config(
        tmp_path, status_port=None, agent_http_port=0, agent_token=AGENT_TOKEN, token=TOKEN
    )
    async with running_host(config, token=TOKEN) as host:
        await host.wait_for(_connected)
        bare = await host.client.get("/status", headers={"Authorization": ""})
        assert bare.status_code == 401
        agent = await host.client.get("/status", headers={"Authorization": f"Bearer {AGENT_TOKEN}"})
        assert agent.status_code == 401


async def test_open_beside_agents_leaves_status_open_on_the_loopback_agents_listener(
    tmp_path: Path,
) -> None:
    config = write_config(
        tmp_path,
        status_port=None,
        agent_http_port=0,
        agent_token=AGENT_TOKEN,
        status_extra=("open_beside_agents = true",),
    )
    async with running_host(config) as host:
        snap = await host.wait_for(_connected)
        assert connector_of(snap)["state"] == "connected"


async def test_status_and_agents_list_run_in_a_shell_without_the_agent_token_variables(
    tmp_path: Path,
) -> None:
    """The host runs with the agent's token and a connector secret from the environment; an
    operator's new shell has neither, and reading status or the directory needs neither."""
    port = _free_port()
    config = write_config(
        tmp_path, status_port=port, agent_http_port=0, agent_token="${NEWCOMER_AGENT_TOKEN}"
    )
    text = config.read_text().replace("env = { ", 'env = { CHAT_SECRET = "${NEWCOMER_SECRET}", ')
    config.write_text(text)
    secrets_env = {"NEWCOMER_AGENT_TOKEN": AGENT_TOKEN, "NEWCOMER_SECRET": "s3cret-value"}
    bare = {k: v for k, v in os.environ.items() if k not in secrets_env}
    async with running_host(config, env=secrets_env) as host:
        await host.wait_for(_connected)
        status = await anyio.run_process(
            [sys.executable, "-m", "switchboard", "status", "--config", str(config)],
            env=bare,
            check=False,
        )
        assert status.returncode == 0, status.stderr.decode()
        assert status.stdout.decode().startswith("Switchboard: ready")
        listed = await anyio.run_process(
            [sys.executable, "-m", "switchboard", "agents", "list", "--config", str(config)],
            env=bare,
            check=False,
        )
        assert listed.returncode == 0, listed.stderr.decode()
        assert "@agent" in listed.stdout.decode()
    # `run` still refuses the same config in that shell, naming the variable.
    refused = await anyio.run_process(
        [sys.executable, "-m", "switchboard", "check", "--config", str(config)],
        env=bare,
        check=False,
    )
    assert refused.returncode == 2
    assert b"NEWCOMER_AGENT_TOKEN is not set" in refused.stderr
