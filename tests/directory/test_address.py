"""The address grammar: ``@handle`` agents, ``name`` and ``owner:capability`` services."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from switchboard.directory import MAX_ADDRESS_LENGTH, InvalidName, validate_address

WORD = st.from_regex(r"[a-z][a-z0-9-]{0,20}", fullmatch=True)


@given(WORD)
def test_an_at_sign_and_a_lower_case_word_is_an_agent_address(word: str) -> None:
    assert validate_address(f"@{word}") == "agent"


@given(WORD, st.one_of(st.none(), WORD))
def test_a_word_or_two_words_joined_by_a_colon_is_a_service_address(
    owner: str, capability: str | None
) -> None:
    address = owner if capability is None else f"{owner}:{capability}"
    assert validate_address(address) == "service"


@given(st.text(max_size=30))
def test_any_string_is_either_valid_by_the_grammar_or_refused_as_an_invalid_name(
    text: str,
) -> None:
    grammar = re.compile(r"@[a-z][a-z0-9-]*|[a-z][a-z0-9-]*(:[a-z][a-z0-9-]*)?")
    if grammar.fullmatch(text) and len(text) <= MAX_ADDRESS_LENGTH:
        assert validate_address(text) in ("agent", "service")
    else:
        with pytest.raises(InvalidName) as caught:
            validate_address(text)
        assert caught.value.name == "invalid_name"
        assert caught.value.code == 4


@pytest.mark.parametrize(
    "address",
    ["", "@", "@Researcher", "@1st", "researcher@", "a:b:c", ":x", "x:", "@a:b", "a b", "a_b"],
)
def test_malformed_addresses_are_refused_with_a_message_that_shows_the_grammar(
    address: str,
) -> None:
    with pytest.raises(InvalidName, match=r"\[a-z\]|non-empty"):
        validate_address(address)


def test_an_address_longer_than_the_limit_is_refused_with_its_length() -> None:
    with pytest.raises(InvalidName, match="65 characters"):
        validate_address("@" + "a" * 64)
