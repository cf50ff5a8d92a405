"""The handshake and readiness, driven by a scripted host over an in-memory link."""

from __future__ import annotations

import anyio
import pytest

from switchboard.connector import Connector, NotGranted, NotReady
from switchboard.transport import INVALID_PARAMS, RpcError
from tests.connector.hostkit import ALL_PATHS, WAIT, RecordingConnector, channel, connected

pytestmark = pytest.mark.anyio


async def test_initialize_echoes_the_protocol_version_and_carries_the_manifest() -> None:
    """S-01; mcpl-protocol.md 1.2: the manifest lives at capabilities.experimental.mcpl."""
    async with connected(RecordingConnector()) as host:
        result = await host.initialize()
    assert result["protocolVersion"] == "2025-06-18"
    assert result["serverInfo"] == {"name": "recorder", "version": "1.2.3"}
    mcpl = result["capabilities"]["experimental"]["mcpl"]
    assert mcpl["version"] == "0.5"
    assert mcpl["pushEvents"] is False
    assert mcpl["channels"]["streaming"] is True
    assert mcpl["featureSets"] == {}
    assert "tools" not in result["capabilities"]


async def test_tools_are_advertised_only_when_the_connector_offers_them() -> None:
    async with connected(Connector("t", tools=True)) as host:
        result = await host.initialize()
        listed = await host.peer.request("tools/list")
    assert result["capabilities"]["tools"] == {"listChanged": False}
    assert listed == {"tools": []}


async def test_ping_and_mcpl_manifest_are_answered() -> None:
    """S-20, S-38: mcpl/manifest returns the bare manifest, the same as at initialize."""
    async with connected(RecordingConnector()) as host:
        result = await host.initialize()
        assert await host.peer.request("ping") == {}
        manifest = await host.peer.request("mcpl/manifest", {})
    assert manifest == result["capabilities"]["experimental"]["mcpl"]


async def test_nothing_privileged_is_sent_before_the_policy_request_is_answered() -> None:
    """S-03; mcpl-protocol.md 1.3: the register frame follows the receipt frame on the wire."""
    connector = RecordingConnector()
    async with connected(connector) as host:
        await host.initialize()
        await host.barrier()
        assert host.recorder.methods() == []
        assert not connector.is_ready
        assert await host.grant() == {"accepted": True}
        register = await host.next("channels/register")
    assert register.params["channels"][0]["id"] == "test:#general"
    assert host.recorder.index_of_result("accepted") < host.recorder.index_of_method(
        "channels/register"
    )


async def test_a_policy_notification_never_makes_the_connector_ready() -> None:
    """S-04: a Notification with a full grant leaves the connector unprivileged."""
    connector = RecordingConnector()
    async with connected(connector) as host:
        await host.initialize()
        await host.peer.notify("featureSets/update", {"effectiveCapabilities": ALL_PATHS})
        await host.barrier()
        assert not connector.is_ready
        assert not connector.allows("channels.register")
        assert host.pending() == []
        with pytest.raises(NotReady):
            await connector.register([channel("test:x")])


async def test_the_ready_event_is_set_and_on_ready_runs_once_the_receipt_is_out() -> None:
    connector = RecordingConnector(channels=())
    async with connected(connector) as host:
        await host.handshake()
        with anyio.fail_after(WAIT):
            await connector.wait_ready()
            await connector.hook_ran.wait()
        assert connector.is_ready
        assert connector.ready_error is None
        await host.grant(["channels.*"])  # a second Request does not run on_ready again
        await host.barrier()
    assert host.pending() == []


async def test_register_is_not_sent_when_channels_register_is_not_granted() -> None:
    """S-10: the SDK limits itself with the same matcher; nothing reaches the host."""
    connector = RecordingConnector()
    async with connected(connector) as host:
        await host.handshake(["channels.publish", "channels.incoming"])
        with anyio.fail_after(WAIT):
            await connector.hook_ran.wait()
        await host.barrier()
        assert host.pending() == []
    assert isinstance(connector.ready_error, NotGranted)
    assert connector.ready_error.capability == "channels.register"


async def test_a_malformed_policy_is_refused_with_invalid_params_and_grants_nothing() -> None:
    """S-12: a path in both lists -> error response, and publish is no longer exercised."""
    connector = RecordingConnector()
    async with connected(connector) as host:
        await host.handshake()
        await host.next("channels/register")
        with pytest.raises(RpcError) as caught:
            await host.grant(["channels.publish"], deniedCapabilities=["channels.publish"])
        assert caught.value.code == INVALID_PARAMS
        assert not connector.allows("channels.publish")


async def test_a_new_connection_starts_from_nothing() -> None:
    connector = RecordingConnector()
    async with connected(connector) as host:
        await host.handshake()
        await host.next("channels/register")
    assert not connector.is_ready
    assert len(connector.channels) == 0
    async with connected(connector) as host:
        await host.initialize()
        await host.barrier()
        assert not connector.is_ready
        await host.grant()
        await host.next("channels/register")
        with anyio.fail_after(WAIT):
            await connector.wait_ready()
