"""MCPL content blocks (spec App. B.1, §10.3; mcpl-protocol.md 3.16).

What this module knows: the four block shapes — ``text``, ``image`` and ``audio`` (inline
``data`` or a ``uri``, optional ``mimeType``) and the flat ``resource`` ``{type, uri}`` — as
one union discriminated on ``type``.

Decision on unknown block types: a block whose ``type`` is not one of the four is a
validation error located at that block (``content.<i>``), so the message carrying it is
reported as malformed rather than silently losing part of its content. Unknown *members* of
a known block are kept, as everywhere in this package.

What it deliberately does not know: MCP's own content types (MCP's ``resource`` is nested and
different; do not mix them), or how a host renders blocks for an agent.
"""

from __future__ import annotations

from typing import Annotated, Literal, Self

from pydantic import Field, TypeAdapter, model_validator

from .wire import WireModel

__all__ = [
    "AudioContent",
    "ContentBlock",
    "ImageContent",
    "ResourceContent",
    "TextContent",
    "content_adapter",
    "text_of",
]


class TextContent(WireModel):
    """``{type:"text", text}``."""

    type: Literal["text"] = "text"
    text: str


class _MediaContent(WireModel):
    """Shared shape of image and audio: inline ``data`` or a ``uri``, at least one."""

    data: str | None = None
    uri: str | None = None
    mime_type: str | None = Field(default=None, alias="mimeType")

    @model_validator(mode="after")
    def _data_or_uri(self) -> Self:
        if self.data is None and self.uri is None:
            raise ValueError("needs either data or uri")
        return self


class ImageContent(_MediaContent):
    """``{type:"image", data, mimeType}`` or ``{type:"image", uri}``."""

    type: Literal["image"] = "image"


class AudioContent(_MediaContent):
    """``{type:"audio", data, mimeType}`` or ``{type:"audio", uri}``."""

    type: Literal["audio"] = "audio"


class ResourceContent(WireModel):
    """MCPL's flat ``{type:"resource", uri}``."""

    type: Literal["resource"] = "resource"
    uri: str


ContentBlock = Annotated[
    TextContent | ImageContent | AudioContent | ResourceContent, Field(discriminator="type")
]
"""Any MCPL content block, chosen by its ``type`` member."""

content_adapter: TypeAdapter[list[ContentBlock]] = TypeAdapter(list[ContentBlock])
"""Validates a ``ContentBlock[]`` on its own (outside a params model)."""


def text_of(blocks: list[ContentBlock]) -> str:
    """Join the text of every ``text`` block with newlines; other blocks contribute nothing."""
    return "\n".join(block.text for block in blocks if isinstance(block, TextContent))
