"""Switchboard follows a connector's manifest changes (MCPL §17; H-57..H-65, H-12, H-13).

Every test runs the real host session against the in-memory FakeConnector, which answers
``mcpl/manifest`` with whatever the test serves next and can hold the narrowing
``featureSets/update`` Request unanswered.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, MutableMapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import pytest

from switchboard.app.board import Switchboard
from switchboard.channels import ChannelRef
from switchboard.connections.session import SessionState
from switchboard.events import ChannelsRemoved, ManifestApplied
from switchboard.protocol import manifest_digest
from switchboard.transport import RpcError
from tests.fake import FakeConnector, board_with, descriptor, message
from tests.helpers import Recorder

pytestmark = pytest.mark.anyio

PUSH_SET = {"kit.push": {"description": "pushes", "uses": ["pushEvents"]}}


def manifest(*, channels: dict[str, bool], push: bool = True, **extra: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"version": "0.5", "channels": channels, **extra}
    if push:
        body["pushEvents"] = True
    return body


def with_revision(body: dict[str, Any]) -> dict[str, Any]:
    return {**body, "revision": manifest_digest(body)}


FULL = {"register": True, "publish": True, "incoming": True}
NO_INCOMING = {"register": True, "publish": True}


@dataclass
class ManifestServer:
    """Plays the connector's side of §17 on top of a FakeConnector."""

    fake: FakeConnector
    served: list[Any] = field(default_factory=list)
    fetched: list[float] = field(default_factory=list)
    policies: list[dict[str, Any]] = field(default_factory=list)
    hold_receipts: bool = False
    release: anyio.Event = field(default_factory=anyio.Event)
    _changed: anyio.Event = field(default_factory=anyio.Event)

    def __post_init__(self) -> None:
        self.fake.extra["mcpl/manifest"] = self.answer_manifest
        self.fake.extra["featureSets/update"] = self._policy

    def _wake(self) -> None:
        self._changed.set()
        self._changed = anyio.Event()

    async def answer_manifest(self, method: str, params: Any) -> Any:
        self.fetched.append(anyio.current_time())
        self._wake()
        if not self.served:
            raise RpcError(-32601, "Method not found")
        return self.served[0] if len(self.served) == 1 else self.served.pop(0)

    async def _policy(self, method: str, params: Any) -> Any:
        self.policies.append(params)
        self._wake()
        if len(self.policies) > 1 and self.hold_receipts:
            await self.release.wait()
        return {"accepted": True}

    async def announce(self, revision: str = "sha256:" + "A" * 43, times: int = 1) -> None:
        assert self.fake.peer is not None
        for _ in range(times):
            await self.fake.peer.notify(
                "mcpl/manifestChanged", {"revision": revision, "domains": ["capabilities"]}
            )

    async def wait(self, *, fetches: int = 0, policies: int = 0) -> None:
        with anyio.fail_after(5):
            while len(self.fetched) < fetches or len(self.policies) < policies:
                await self._changed.wait()


@asynccontextmanager
async def served(
    tmp_path: Path,
    initial: dict[str, Any],
    *,
    recorder: Recorder | None = None,
    **config: Any,
) -> AsyncIterator[tuple[Switchboard, ManifestServer]]:
    fake = FakeConnector(mcpl=initial)
    server = ManifestServer(fake)
    config.setdefault("manifest_fetch_interval", 0.0)
    async with board_with(tmp_path, fake, recorder=recorder, **config) as board:
        await server.wait(policies=1)
        yield board, server


async def settle(server: ManifestServer) -> None:
    """Make sure the host has read everything sent so far (a ping is answered in order)."""
    assert server.fake.peer is not None
    await server.fake.peer.request("ping", {})


async def test_a_removal_is_revoked_before_the_narrowing_request_is_answered(
    tmp_path: Path,
) -> None:
    """H-58, H-13, H-12: revoke at once, then a Request carrying the complete new grant."""
    async with served(tmp_path, manifest(channels=FULL)) as (board, server):
        fake = server.fake
        await fake.call("channels/register", {"channels": [descriptor("room")]})
        first = await fake.call("channels/incoming", {"messages": [message("room", "m1")]})
        assert first["results"][0]["accepted"] is True
        server.served.append(with_revision(manifest(channels=NO_INCOMING)))
        server.hold_receipts = True
        await server.announce()
        await server.wait(fetches=1, policies=2)
        with pytest.raises(RpcError) as denied:
            await fake.call("channels/incoming", {"messages": [message("room", "m2")]})
        assert denied.value.code == -32002
        assert denied.value.data == {"capability": "channels.incoming"}
        narrowing = server.policies[1]
        assert narrowing["effectiveCapabilities"] == [
            "channels.publish",
            "channels.register",
            "pushEvents",
        ]
        assert "channels.incoming" not in narrowing["deniedCapabilities"]
        server.release.set()
        assert board.sessions["s1"].state is SessionState.READY


async def test_nothing_changes_until_the_fetched_manifest_has_been_read(tmp_path: Path) -> None:
    """H-57: an announcement alone is never acted on; the fetch comes first."""
    gate = anyio.Event()
    async with served(tmp_path, manifest(channels=FULL)) as (board, server):
        fetch = server.answer_manifest

        async def slow_fetch(method: str, params: Any) -> Any:
            await gate.wait()
            return await fetch(method, params)

        server.fake.extra["mcpl/manifest"] = slow_fetch
        server.served.append(manifest(channels=NO_INCOMING))
        await server.announce()
        await settle(server)
        session = board.sessions["s1"]
        assert session.grant.allows("channels.incoming")
        assert len(server.policies) == 1
        gate.set()
        await server.wait(fetches=1, policies=2)
        assert not session.grant.allows("channels.incoming")


async def test_an_addition_is_never_granted_and_is_reported_as_pending(tmp_path: Path) -> None:
    """H-59: a newly advertised path stays ungranted; no Request widens anything."""
    recorder = Recorder()
    initial = manifest(channels=FULL, push=False)
    async with served(tmp_path, initial, recorder=recorder) as (board, server):
        grown = manifest(channels={**FULL, "streaming": True}, featureSets=PUSH_SET)
        server.served.append(grown)
        await server.announce()
        seen = await recorder.wait_kind(ManifestApplied)
        session = board.sessions["s1"]
        assert not session.grant.allows("pushEvents")
        assert not session.grant.allows("channels.streaming")
        assert session.enabled_feature_sets == frozenset()
        impacts = {(i.kind, i.subject) for i in seen.impacts}
        assert ("capability-expansion-pending", "pushEvents") in impacts
        assert ("capability-expansion-pending", "channels.streaming") in impacts
        await settle(server)
        assert len(server.policies) == 1
        push = {
            "featureSet": "kit.push",
            "eventId": "e1",
            "timestamp": "2026-01-01T00:00:00Z",
            "payload": {"content": [{"type": "text", "text": "x"}]},
        }
        with pytest.raises(RpcError) as denied:
            await server.fake.call("push/event", push)
        assert denied.value.code == -32002


async def test_a_partly_invalid_manifest_still_has_its_removals_applied(tmp_path: Path) -> None:
    """H-60: pushEvents disappears while a new set is invalid; pushEvents is revoked."""
    initial = manifest(channels=FULL, featureSets=PUSH_SET)
    async with served(tmp_path, initial) as (board, server):
        session = board.sessions["s1"]
        assert session.enabled_feature_sets == {"kit.push"}
        broken = {"kit.bogus": {"description": "x", "uses": ["bogus"]}}
        server.served.append(manifest(channels=FULL, push=False, featureSets=broken))
        await server.announce()
        await server.wait(fetches=1, policies=2)
        assert not session.grant.allows("pushEvents")
        assert session.enabled_feature_sets == frozenset()
        assert server.policies[1]["disabled"] == ["kit.bogus"]


async def test_an_unparseable_manifest_keeps_the_old_one_however_often_it_comes(
    tmp_path: Path,
) -> None:
    """H-61: a result that is not an object changes nothing and never drops MCPL."""
    initial = manifest(channels=FULL)
    async with served(tmp_path, initial) as (board, server):
        session = board.sessions["s1"]
        before = session.manifest
        server.served.append("garbage")
        for count in range(1, 6):
            await server.announce()
            await server.wait(fetches=count)
            await settle(server)
        assert session.manifest_watch.parse_failures == 5
        assert session.state is SessionState.READY
        assert session.manifest is before
        assert session.grant.allows("channels.incoming")
        assert len(server.policies) == 1


async def test_an_unchanged_revision_is_still_fetched_and_the_content_decides(
    tmp_path: Path,
) -> None:
    """H-62, H-65: the same revision with different content is applied."""
    initial = with_revision(manifest(channels=FULL))
    async with served(tmp_path, initial) as (board, server):
        stale = {**manifest(channels=NO_INCOMING), "revision": initial["revision"]}
        server.served.append(stale)
        await server.announce(initial["revision"])
        await server.wait(fetches=1, policies=2)
        assert not board.sessions["s1"].grant.allows("channels.incoming")


async def test_a_revision_that_is_not_the_digest_is_logged_and_the_content_applied(
    tmp_path: Path, logs: list[MutableMapping[str, Any]]
) -> None:
    """H-64: a digest mismatch is a connector defect, never a reason to refuse."""
    async with served(tmp_path, manifest(channels=FULL)) as (board, server):
        wrong = {**manifest(channels=NO_INCOMING), "revision": "sha256:" + "B" * 43}
        server.served.append(wrong)
        await server.announce()
        await server.wait(fetches=1, policies=2)
        assert not board.sessions["s1"].grant.allows("channels.incoming")
    assert any(e["event"] == "manifest_revision_mismatch" for e in logs)


async def test_a_flood_of_announcements_is_coalesced_into_at_most_two_fetches(
    tmp_path: Path, logs: list[MutableMapping[str, Any]]
) -> None:
    """H-63: one fetch in flight and one pending; the excess is dropped and logged."""
    async with served(tmp_path, manifest(channels=FULL), manifest_fetch_interval=0.2) as (
        board,
        server,
    ):
        server.served.append(manifest(channels=FULL))
        await server.announce(times=200)
        await settle(server)
        await server.wait(fetches=1)
        watch = board.sessions["s1"].manifest_watch
        with anyio.fail_after(5):
            while watch.pending or watch.fetching:
                await anyio.lowlevel.checkpoint()
        assert watch.announcements == 200
        assert 1 <= watch.fetches <= 2
        assert watch.fetches + watch.dropped == 200
        assert len(server.fetched) == watch.fetches
        assert len(server.policies) == 1
    assert any(e["event"] == "manifest_changed_flood_coalesced" for e in logs)


async def test_two_fetches_start_at_least_the_configured_interval_apart(tmp_path: Path) -> None:
    """H-63: the rate bound holds between fetches, not only within a burst."""
    async with served(tmp_path, manifest(channels=FULL), manifest_fetch_interval=0.3) as (
        _board,
        server,
    ):
        server.served.append(manifest(channels=FULL))
        await server.announce()
        await server.wait(fetches=1)
        await settle(server)
        await server.announce()
        await server.wait(fetches=2)
        assert server.fetched[1] - server.fetched[0] >= 0.3


async def test_revoking_channel_registration_drops_the_connections_channels(
    tmp_path: Path,
) -> None:
    """A revoked channels.register behaves as if never advertised: registrations go."""
    recorder = Recorder()
    async with served(tmp_path, manifest(channels=FULL), recorder=recorder) as (board, server):
        await server.fake.call("channels/register", {"channels": [descriptor("room")]})
        assert ChannelRef("s1", "room") in board.registry
        server.served.append(manifest(channels={"publish": True, "incoming": True}))
        await server.announce()
        dropped = await recorder.wait_kind(ChannelsRemoved)
        assert dropped.channel_ids == ("room",)
        assert ChannelRef("s1", "room") not in board.registry
        with pytest.raises(RpcError) as denied:
            await server.fake.call("channels/list", {})
        assert denied.value.code == -32002


async def test_a_feature_set_whose_uses_widen_is_disabled_and_a_new_set_stays_off(
    tmp_path: Path,
) -> None:
    """§17.5: a changed uses is revalidated fail-closed; a new set is never switched on."""
    initial = manifest(channels=FULL, featureSets=PUSH_SET)
    async with served(tmp_path, initial) as (board, server):
        widened = {
            "kit.push": {"description": "pushes", "uses": ["pushEvents", "modelInfo"]},
            "kit.new": {"description": "new", "uses": ["pushEvents"]},
        }
        server.served.append(manifest(channels=FULL, featureSets=widened))
        await server.announce()
        await server.wait(fetches=1, policies=2)
        session = board.sessions["s1"]
        assert session.enabled_feature_sets == frozenset()
        assert session.grant.allows("pushEvents")
        assert server.policies[1]["enabled"] == []
        assert server.policies[1]["disabled"] == ["kit.new", "kit.push"]


async def test_a_refused_narrowing_switches_mcpl_off(tmp_path: Path) -> None:
    async with served(tmp_path, manifest(channels=FULL)) as (board, server):

        async def refuse(method: str, params: Any) -> Any:
            server.policies.append(params)
            return {"accepted": False, "fallback": "mcp-only"}

        server.fake.extra["featureSets/update"] = refuse
        server.served.append(manifest(channels=NO_INCOMING))
        await server.announce()
        session = board.sessions["s1"]
        with anyio.fail_after(5):
            while session.state is SessionState.READY:
                await anyio.lowlevel.checkpoint()
        assert session.state is SessionState.MCP_ONLY
        assert not session.grant.allows("channels.register")


async def test_a_connector_that_announces_but_cannot_be_queried_keeps_its_manifest(
    tmp_path: Path, logs: list[MutableMapping[str, Any]]
) -> None:
    async with served(tmp_path, manifest(channels=FULL)) as (board, server):
        await server.announce()
        await server.wait(fetches=1)
        await settle(server)
        assert board.sessions["s1"].grant.allows("channels.incoming")
    assert any(e["event"] == "manifest_announced_but_not_queryable" for e in logs)


async def test_an_identical_manifest_changes_nothing_and_tells_nothing(tmp_path: Path) -> None:
    recorder = Recorder()
    initial = manifest(channels=FULL)
    async with served(tmp_path, initial, recorder=recorder) as (board, server):
        server.served.append(with_revision(initial))
        await server.announce()
        await server.wait(fetches=1)
        await settle(server)
        assert recorder.count(ManifestApplied) == 0
        assert len(server.policies) == 1
        assert board.sessions["s1"].manifest_watch.applied == 0
