"""MCPL content blocks (App. B.1; mcpl-protocol.md 3.16)."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from switchboard.protocol import (
    AudioContent,
    ImageContent,
    ResourceContent,
    TextContent,
    content_adapter,
    dump,
    text_of,
)


@pytest.mark.parametrize(
    ("block", "kind"),
    [
        ({"type": "text", "text": "hi"}, TextContent),
        ({"type": "image", "data": "aGk=", "mimeType": "image/png"}, ImageContent),
        ({"type": "image", "uri": "https://x/y.png"}, ImageContent),
        ({"type": "audio", "data": "aGk=", "mimeType": "audio/ogg"}, AudioContent),
        ({"type": "audio", "uri": "file:///a.ogg"}, AudioContent),
        ({"type": "resource", "uri": "discord://msg/1"}, ResourceContent),
    ],
)
def test_each_spec_block_shape_is_accepted_and_round_trips(
    block: dict[str, Any], kind: type
) -> None:
    """App. B.1: text, image/audio (data or uri, mimeType optional), flat resource."""
    [parsed] = content_adapter.validate_python([block])
    assert isinstance(parsed, kind)
    assert dump(parsed) == block


def test_a_media_block_needs_data_or_uri() -> None:
    with pytest.raises(ValidationError) as info:
        content_adapter.validate_python([{"type": "image", "mimeType": "image/png"}])
    assert info.value.errors()[0]["loc"] == (0, "image")


def test_an_unknown_block_type_is_rejected_at_its_position() -> None:
    """Decision (content.py): an unknown `type` is a located validation error."""
    blocks = [{"type": "text", "text": "ok"}, {"type": "video", "uri": "x"}]
    with pytest.raises(ValidationError) as info:
        content_adapter.validate_python(blocks)
    [error] = info.value.errors()
    assert error["loc"] == (1,)
    assert error["type"] == "union_tag_invalid"


def test_a_block_without_type_is_rejected() -> None:
    with pytest.raises(ValidationError):
        content_adapter.validate_python([{"text": "no type"}])


def test_unknown_members_of_a_known_block_are_kept() -> None:
    """§8 preamble: tolerate and keep unknown fields."""
    block = {"type": "text", "text": "hi", "annotations": {"audience": ["user"]}}
    [parsed] = content_adapter.validate_python([block])
    assert dump(parsed) == block


def test_blocks_can_be_built_in_python_with_their_type_filled_in() -> None:
    assert dump(TextContent(text="hi")) == {"type": "text", "text": "hi"}
    assert dump(ImageContent(uri="u", mime_type="image/png")) == {
        "type": "image",
        "uri": "u",
        "mimeType": "image/png",
    }


def test_text_of_joins_the_text_blocks_only() -> None:
    blocks = content_adapter.validate_python(
        [
            {"type": "text", "text": "a"},
            {"type": "resource", "uri": "r"},
            {"type": "text", "text": "b"},
        ]
    )
    assert text_of(blocks) == "a\nb"
