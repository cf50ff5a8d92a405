"""NdjsonDecoder: splitting, CRLF, blank lines, oversize lines, and chunking independence."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from switchboard.transport import FrameTooLarge, NdjsonDecoder, encode_frames

Output = list[bytes | FrameTooLarge]


def feed_whole(data: bytes, max_frame: int) -> Output:
    decoder = NdjsonDecoder(max_frame)
    return decoder.feed(data) + decoder.finish()


def feed_bytewise(data: bytes, max_frame: int) -> Output:
    decoder = NdjsonDecoder(max_frame)
    out: Output = []
    for i in range(len(data)):
        out += decoder.feed(data[i : i + 1])
        assert decoder.buffered <= max_frame + 1
    return out + decoder.finish()


def reference(data: bytes, max_frame: int) -> Output:
    """The obvious model: split everything, then judge each line."""
    out: Output = []
    for line in data.split(b"\n"):
        if line.endswith(b"\r"):
            line = line[:-1]
        if not line or line.isspace():
            continue
        out.append(FrameTooLarge(max_frame) if len(line) > max_frame else line)
    return out


CASES: list[tuple[str, bytes, Output]] = [
    ("one frame", b'{"a":1}\n', [b'{"a":1}']),
    ("two frames", b"a\nb\n", [b"a", b"b"]),
    ("crlf is stripped once", b"a\r\nb\r\r\n", [b"a", b"b\r"]),
    ("blank and whitespace lines are skipped", b"\n\n  \n\r\na\n\t\n", [b"a"]),
    ("a final line without newline comes at finish", b"a\nbc", [b"a", b"bc"]),
    ("exactly max_frame fits", b"12345678\n", [b"12345678"]),
    ("max_frame with crlf fits", b"12345678\r\n", [b"12345678"]),
    ("one over is refused", b"123456789\nok\n", [FrameTooLarge(8), b"ok"]),
    ("a long line is reported once", b"x" * 50 + b"\nok\n", [FrameTooLarge(8), b"ok"]),
]


@pytest.mark.parametrize(("data", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_the_decoder_gives_the_same_frames_fed_whole_or_byte_by_byte(
    data: bytes, expected: Output
) -> None:
    assert feed_whole(data, 8) == expected
    assert feed_bytewise(data, 8) == expected
    assert reference(data, 8) == expected


def test_an_oversized_line_is_never_buffered_whole_and_is_reported_as_soon_as_it_overflows() -> (
    None
):
    decoder = NdjsonDecoder(16)
    assert decoder.feed(b"x" * 10) == []
    assert decoder.feed(b"x" * 10) == [FrameTooLarge(16)]
    assert decoder.buffered == 0
    assert decoder.feed(b"x" * 1000) == []
    assert decoder.buffered == 0
    assert decoder.feed(b"xx\n{}\n") == [b"{}"]


def test_a_decoder_refuses_a_limit_below_one() -> None:
    with pytest.raises(ValueError, match="positive"):
        NdjsonDecoder(0)


def test_encode_frames_appends_one_newline_per_frame() -> None:
    assert encode_frames([b"a"]) == b"a\n"
    assert encode_frames([b"a", b"b"]) == b"a\nb\n"
    decoder = NdjsonDecoder(4)
    assert decoder.feed(encode_frames([b"ab", b"cd", b"ef"])) == [b"ab", b"cd", b"ef"]


lines = st.one_of(
    st.binary(max_size=12).map(lambda b: b.replace(b"\n", b"")),
    st.sampled_from([b"", b"\r", b" ", b"x" * 15, b"x" * 16 + b"\r", b"y" * 17, b"z" * 40]),
)


@given(
    st.lists(lines, max_size=12),
    st.booleans(),
    st.lists(st.integers(min_value=0, max_value=400), max_size=20),
)
def test_any_split_of_the_stream_into_chunks_gives_the_same_frames(
    parts: list[bytes], trailing_newline: bool, cuts: list[int]
) -> None:
    max_frame = 16
    data = b"\n".join(parts) + (b"\n" if trailing_newline else b"")
    positions = sorted({min(c, len(data)) for c in cuts})
    chunks = [data[a:b] for a, b in zip([0, *positions], [*positions, len(data)], strict=True)]
    decoder = NdjsonDecoder(max_frame)
    out: Output = []
    for chunk in chunks:
        out += decoder.feed(chunk)
        assert decoder.buffered <= max_frame + 1
    out += decoder.finish()
    assert out == feed_whole(data, max_frame)
    assert out == reference(data, max_frame)
