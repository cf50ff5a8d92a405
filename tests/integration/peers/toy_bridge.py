"""The mcpl-cc-bridge toy server's wire behaviour, with inference asked on cue.

Usage: ``toy_bridge.py RECORD``. Written from peers.md §6, not from its code. It advertises the
toy's own manifest (set ``toy``: pushes, inference, lifecycle, four channel leaves, observe and
``inject.beforeUser``), its request ids start at 101, and it does nothing until a policy names
``toy`` in ``enabled``. Then it registers ``toy:lobby`` (``address.channelId: "raw-lobby"``) and
goes on only if the answer itemizes ``{id: "toy:lobby", accepted: true}``: an incoming mention
(``toy-m1``), a push with no origin (``event:toy-beat``, tag ``toy:heartbeat``), a bot reply
(``toy-m2``), with ``TOY_INFERENCE=1`` an ``inference/request``, a push by MCPL id
(``event:toy-mcpl``), one by native id only (``event:toy-native``), a DM push with no channel
(``event:toy-dm``) and a second bot reply (``toy-m3``). ``context/beforeInference`` is answered
with a ``beforeUser`` and an ``afterUser`` injection (the latter never advertised).

On cue from a ``channels/publish``: ``ask: PROMPT`` sends a streaming ``inference/request``
(a system message, PROMPT, ``maxTokens`` 64, ``temperature`` 0.2), ``ask N: PROMPT`` sends N at
once; each answer, and then ``model/info``'s, comes back as an incoming ``toy-answer-<id>`` whose
text starts ``answer``, ``error <code> <reason>``; ``model <id>`` or ``model-error <code>
<reason>`` (the toy advertises no ``modelInfo``; ``TOY_MODEL_INFO=1`` adds it).
``dup: PROMPT`` sends two requests under one string id (``"dup-1"``), in one write, and tells
each answer as ``toy-dup-0`` and ``toy-dup-1``. Any other publish is answered by ``toy-done``.
Every host message is recorded in RECORD.
"""

from __future__ import annotations

import asyncio
import itertools
import os
import sys
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[3]))

from tests.integration.peers.wire import (
    Wire,
    incoming_message,
    initialize_answer,
    push_params,
    serve_stdio,
)

__all__ = ["LOBBY", "TOY", "main"]

TOY: dict[str, Any] = {
    "version": "0.5",
    "pushEvents": True,
    "inferenceRequest": True,
    "inferenceLifecycle": True,
    "channels": {"register": True, "lifecycle": True, "incoming": True, "publish": True},
    "contextHooks": {
        "beforeInference": {"observe": True, "inject": {"beforeUser": True, "system": True}}
    },
    "featureSets": {
        "toy": {
            "description": "Toy feature set exercising every bridged surface",
            "uses": [
                "pushEvents",
                "inferenceRequest",
                "inferenceLifecycle",
                "channels.register",
                "channels.lifecycle",
                "channels.incoming",
                "channels.publish",
                "contextHooks.beforeInference.observe",
                "contextHooks.beforeInference.inject.beforeUser",
            ],
        }
    },
}
LOBBY: dict[str, Any] = {
    "id": "toy:lobby",
    "type": "room",
    "label": "#lobby",
    "direction": "bidirectional",
    "address": {"channelId": "raw-lobby"},
}
BOT = {"author": {"id": "bot", "name": "Toy Bot"}}


def ask_params(prompt: str) -> dict[str, Any]:
    return {
        "featureSet": "toy",
        "conversationId": "toy-conv",
        "stream": True,
        "messages": [
            {"role": "system", "content": "You are the toy's summarizer."},
            {"role": "user", "content": prompt},
        ],
        "preferences": {"maxTokens": 64, "temperature": 0.2},
    }


async def main() -> None:
    record = sys.argv[1]
    wire = Wire(record, ids=itertools.count(101))
    started = asyncio.Event()

    async def tell(mid: str, text: str) -> None:
        await wire.request(
            "channels/incoming", {"messages": [incoming_message(LOBBY["id"], mid, text)]}
        )

    async def ask(prompt: str) -> None:
        message, answer = wire.prepare("inference/request", ask_params(prompt))
        rid = message["id"]
        await wire.send(message)
        got = await answer
        if "result" in got:
            await tell(f"toy-answer-{rid}", f"answer {got['result']['content']}")
        else:
            error = got["error"]
            reason = (error.get("data") or {}).get("reason", "")
            await tell(f"toy-answer-{rid}", f"error {error['code']} {reason} {error['message']}")
            return
        info = await wire.request("model/info", {})
        if "result" in info:
            await tell(f"toy-model-{rid}", f"model {info['result']['id']}")
        else:
            reason = (info["error"].get("data") or {}).get("reason", "")
            await tell(f"toy-model-{rid}", f"model-error {info['error']['code']} {reason}")

    async def ask_twice(prompt: str) -> None:
        request: dict[str, Any] = {"jsonrpc": "2.0", "id": "dup-1", "method": "inference/request"}
        request["params"] = ask_params(prompt)
        first = wire.expect("dup-1")
        await wire.send_together(request, request)
        for n, answer in enumerate((first, None)):
            got = await (answer if answer is not None else wire.expect("dup-1"))
            outcome = (
                f"answer {got['result']['content']}"
                if "result" in got
                else f"error {got['error']['code']}"
            )
            await tell(f"toy-dup-{n}", outcome)

    async def initialize(msg: dict[str, Any]) -> None:
        advertised = dict(TOY)
        if os.environ.get("TOY_MODEL_INFO") == "1":
            advertised["modelInfo"] = True
        await wire.answer(msg, initialize_answer("toy", advertised, tools=False))

    async def policy(msg: dict[str, Any]) -> None:
        if "id" in msg:
            await wire.answer(msg, {"accepted": True})
        if "toy" not in msg["params"].get("enabled", []) or started.is_set():
            return
        started.set()
        answer = await wire.request("channels/register", {"channels": [LOBBY]})
        results = answer.get("result", {}).get("results", [])
        if {"id": "toy:lobby", "accepted": True} not in results:
            return  # the toy needs itemized results
        mention = incoming_message(LOBBY["id"], "toy-m1", "@agent hi", tags=["chat:mention"])
        await wire.request("channels/incoming", {"messages": [mention]})
        beat = push_params("toy", "toy-beat", "heartbeat", None, tags=["toy:heartbeat"])
        await wire.request("push/event", beat)
        reply = incoming_message(
            LOBBY["id"], "toy-m2", "a bot reply", tags=["chat:reply", "chat:from-bot"], **BOT
        )
        await wire.request("channels/incoming", {"messages": [reply]})
        if os.environ.get("TOY_INFERENCE") == "1":
            await ask("summarize the lobby")
        pushes = [
            ("toy-mcpl", "by mcpl id", {"mcplChannelId": "toy:lobby"}),
            ("toy-native", "by native id", {"channelId": "raw-lobby"}),
            ("toy-dm", "a DM", {"authorId": "u9", "authorName": "Dee"}),
        ]
        for event_id, text, origin in pushes:
            await wire.request("push/event", push_params("toy", event_id, text, origin))
        again = incoming_message(
            LOBBY["id"], "toy-m3", "another bot reply", tags=["chat:from-bot"], **BOT
        )
        await wire.request("channels/incoming", {"messages": [again]})

    async def before_inference(msg: dict[str, Any]) -> None:
        await wire.answer(
            msg,
            {
                "featureSet": "toy",
                "contextInjections": [
                    {"namespace": "toy", "position": "beforeUser", "content": "toy context"},
                    {"namespace": "toy", "position": "afterUser", "content": "never granted"},
                ],
            },
        )

    async def publish(msg: dict[str, Any]) -> None:
        if "id" in msg:
            await wire.answer(msg, {"delivered": True, "messageId": f"toy-out-{msg['id']}"})
        text = "".join(b.get("text", "") for b in msg["params"]["content"])
        if text.startswith("dup:"):
            await ask_twice(text[4:].strip())
        elif text.startswith("ask"):
            head, _, prompt = text.partition(":")
            count = int(head[3:].strip() or "1")
            await asyncio.gather(*(ask(prompt.strip()) for _ in range(count)))
        else:
            await tell("toy-done", "done")

    wire.on("initialize", initialize)
    wire.on("featureSets/update", policy)
    wire.on("context/beforeInference", before_inference)
    wire.on("channels/publish", publish)
    await serve_stdio(wire)


if __name__ == "__main__":
    asyncio.run(main())
