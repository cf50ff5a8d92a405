"""The conformance kit passes the Matrix bridge: ``switchboard conformance server --
switchboard-matrix`` with the environment pointing at a real Synapse has no MUST failure.

A person keeps the bridge's room lively while the kit runs, so the checks that need the
connector to act are exercised rather than skipped: she answers every question the kit
publishes with a Matrix reply (``channels/incoming``, S-28, and the trace S-33 looks for),
and renames the room with each answer and every second besides (``channels/changed``,
S-27).
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import Any

import anyio
import pytest

from .support import BRIDGE, Person, bridge_env, signed_in
from .synapse import Synapse

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

EXERCISED = (
    "server.channels.register_request_form",  # S-25
    "server.channels.changed_request_form",  # S-27
    "server.channels.incoming_is_request",  # S-28
    "server.channels.publish_delivers",  # S-29
    "server.channels.no_delivery_side_effect",  # S-33, S-35
    "server.tags.namespaced",  # S-18
    "server.grant.reduction_respected",  # S-13
)


async def _keep_the_room_lively(ann: Person, room: str, bot: str) -> None:
    answered: set[str] = set()
    renames = 0
    last_rename = 0.0
    while True:
        await ann.sync(200)
        questions = [
            str(event.get("event_id"))
            for event in ann.seen
            if event.get("sender") == bot
            and "?" in str(event.get("content", {}).get("body", ""))
            and str(event.get("event_id")) not in answered
        ]
        for event_id in questions:
            answered.add(event_id)
            await ann.reply(room, event_id, "yes")
        # A rename with every answer (so the kit's provoked session sees a channels/changed)
        # and every second besides.
        if questions or time.monotonic() - last_rename > 1.0:
            renames += 1
            last_rename = time.monotonic()
            await ann.rename(room, f"Kit room {renames}")


async def test_the_conformance_kit_finds_no_must_failure_in_the_bridge(
    synapse: Synapse, tmp_path: Path
) -> None:
    bot = await synapse.register(synapse.fresh_name("kitbot"), displayname="Kit Bot")
    ann_user = await synapse.register(synapse.fresh_name("ann"), displayname="Ann")
    env = {**os.environ, **bridge_env(synapse, bot, tmp_path / "bridge-state")}
    argv = [
        sys.executable,
        "-m",
        "switchboard",
        "conformance",
        "server",
        "--json",
        "--policy-silence",
        "1",
        "--",
        BRIDGE,
    ]
    async with signed_in(synapse, ann_user) as ann:
        room = await ann.create_room("Kit room", invite=[bot.user_id])
        async with signed_in(synapse, bot) as operator:
            await operator.join(room)
        async with anyio.create_task_group() as group:
            group.start_soon(_keep_the_room_lively, ann, room, bot.user_id)
            with anyio.fail_after(420):
                done = await anyio.run_process(argv, env=env, check=False)
            group.cancel_scope.cancel()

    report: dict[str, Any] = json.loads(done.stdout)
    checks = {c["id"]: c for section in report["sections"] for c in section["checks"]}
    failed = {
        check_id: check["message"]
        for check_id, check in checks.items()
        if check["outcome"] == "fail" and check["level"] == "MUST"
    }
    assert failed == {}, failed
    assert report["summary"]["must_failures"] == 0
    assert done.returncode == 0, done.stderr.decode()[-2000:]
    assert {check_id: checks[check_id]["outcome"] for check_id in EXERCISED} == dict.fromkeys(
        EXERCISED, "pass"
    )
