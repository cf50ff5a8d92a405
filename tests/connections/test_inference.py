"""A connector's ``inference/request`` and ``model/info``: what is refused, with which code, before
any agent is asked (mcpl-protocol.md 3.7, 3.11, 3.12; H-17..H-20), and how the params are read.

The end-to-end answers through a real client's sampling are in
tests/integration/peers/test_toy_bridge.py and tests/clients/test_sampling_clients.py.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from switchboard.connections.inference import (
    DEFAULT_MAX_TOKENS,
    InferenceAnswer,
    answer_wire,
    finish_reason,
    read_ask,
)
from switchboard.transport import RpcError
from tests.fake import ALL_CHANNELS, FakeConnector, board_with

pytestmark = pytest.mark.anyio


def inference_connector(streaming: bool = False) -> FakeConnector:
    return FakeConnector(
        mcpl={
            "version": "0.5",
            "channels": dict(ALL_CHANNELS),
            "pushEvents": True,
            "inferenceRequest": {"streaming": streaming},
            "modelInfo": True,
            "featureSets": {
                "mem": {"description": "d", "uses": ["inferenceRequest", "modelInfo"]},
                "beats": {"description": "d", "uses": ["pushEvents"]},
            },
        }
    )


def ask(feature_set: str = "mem", **extra: Any) -> dict[str, Any]:
    return {"featureSet": feature_set, "messages": [{"role": "user", "content": "hi"}], **extra}


async def refused(fake: FakeConnector, method: str, params: Any) -> RpcError:
    with pytest.raises(RpcError) as caught:
        await fake.call(method, params)
    return caught.value


async def test_each_bad_request_is_refused_with_the_specs_code_and_counted(tmp_path: Path) -> None:
    """H-19: -32602 bad params, -32003 an undeclared set, -32002 a set whose uses lack
    inferenceRequest, -32002 a stream without inferenceRequest.streaming."""
    fake = inference_connector()
    async with board_with(tmp_path, fake) as board:
        bad = await refused(fake, "inference/request", {"featureSet": "mem", "messages": []})
        unknown = await refused(fake, "inference/request", ask("nope"))
        undeclared = await refused(fake, "inference/request", ask("beats"))
        stream = await refused(fake, "inference/request", ask(stream=True))
        statistics = board.sessions["s1"].statistics()
    assert bad.code == -32602
    assert "messages" in bad.message
    assert unknown.code == -32003
    assert (undeclared.code, undeclared.data) == (-32002, {"capability": "inferenceRequest"})
    assert (stream.code, stream.data) == (-32002, {"capability": "inferenceRequest.streaming"})
    assert statistics.inference_refused == 4


async def test_without_the_grant_inference_and_model_info_are_capability_denied(
    tmp_path: Path,
) -> None:
    """H-18, H-20: fail closed, as if never advertised."""
    fake = inference_connector(streaming=True)
    async with board_with(tmp_path, fake, grant=["channels.*", "pushEvents"]) as board:
        inference = await refused(fake, "inference/request", ask())
        info = await refused(fake, "model/info", {})
        disabled = board.sessions["s1"].disabled_feature_sets
    assert (inference.code, inference.data) == (-32002, {"capability": "inferenceRequest"})
    assert (info.code, info.data) == (-32002, {"capability": "modelInfo"})
    (mem,) = disabled
    assert mem.enable_with is not None
    assert "inferenceRequest" in mem.enable_with


async def test_with_no_agent_attached_a_valid_request_is_answered_with_an_error_naming_it(
    tmp_path: Path,
) -> None:
    """H-17: never silence."""
    fake = inference_connector(streaming=True)
    async with board_with(tmp_path, fake):
        error = await refused(fake, "inference/request", ask(stream=True))
    assert error.code == -32603
    assert error.data == {"reason": "inference-unavailable", "agent": "@agent"}
    assert "has no session attached" in error.message


def test_mcp_stop_reasons_map_to_the_three_finish_reasons() -> None:
    assert finish_reason("endTurn") == "end_turn"
    assert finish_reason("maxTokens") == "max_tokens"
    assert finish_reason("stopSequence") == "stop_sequence"
    assert finish_reason(None) == "end_turn"
    assert finish_reason("toolUse") == "end_turn"


def test_the_answer_reports_token_usage_as_unknown_never_as_zero() -> None:
    wire = answer_wire(InferenceAnswer("text", "m", "endTurn"))
    assert wire == {
        "content": "text",
        "model": "m",
        "finishReason": "end_turn",
        "usage": {"inputTokens": None, "outputTokens": None},
    }


_text = st.text(max_size=20)
_message = st.fixed_dictionaries(
    {"role": st.sampled_from(["user", "assistant", "system"]), "content": _text}
)


@given(
    messages=st.lists(_message, min_size=1, max_size=6),
    max_tokens=st.none() | st.integers(min_value=1, max_value=10_000),
    temperature=st.none() | st.floats(min_value=0, max_value=2),
)
def test_reading_an_ask_keeps_every_message_in_order_with_system_text_as_the_system_prompt(
    messages: list[dict[str, str]], max_tokens: int | None, temperature: float | None
) -> None:
    preferences: dict[str, Any] = {}
    if max_tokens is not None:
        preferences["maxTokens"] = max_tokens
    if temperature is not None:
        preferences["temperature"] = temperature
    params = {"featureSet": "f", "messages": messages, "preferences": preferences}
    spoken = [m for m in messages if m["role"] != "system"]
    if not spoken:
        with pytest.raises(RpcError) as caught:
            read_ask("s", params)
        assert caught.value.code == -32602
        return
    got, stream = read_ask("s", params)
    assert stream is False
    assert [(m.role, m.content[0]["text"]) for m in got.messages] == [
        (m["role"], m["content"]) for m in spoken
    ]
    systems = [m["content"] for m in messages if m["role"] == "system"]
    assert got.system == ("\n\n".join(systems) if systems else None)
    assert got.max_tokens == (DEFAULT_MAX_TOKENS if max_tokens is None else max_tokens)
    assert got.temperature == temperature


KEYS = ["role", "content", "type", "text", "data", "mimeType", "maxTokens", "temperature", "model"]
_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=5),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(
            st.sampled_from(["role", "content", "type", "text", "x"]), inner, max_size=3
        )
    ),
    max_leaves=12,
)


def _read_or_code(params: Any) -> str | int:
    try:
        read_ask("s", params)
    except RpcError as exc:
        return exc.code
    return "ask"


@given(
    params=st.dictionaries(
        st.sampled_from(["featureSet", "messages", "preferences", "stream", "other"]), _json
    )
)
def test_any_params_either_make_an_ask_or_are_refused_invalid_params(
    params: dict[str, Any],
) -> None:
    assert _read_or_code(params) in ("ask", -32602)
