"""Directory addresses: the grammar, and whether an address names an agent or a service.

The grammar (also in docs/directory.md)::

    address  = agent | service
    agent    = "@" word                  ; @researcher, @task-42
    service  = word | word ":" word      ; weather, research:summarize
    word     = [a-z] [a-z0-9-]*

At most 64 characters in all. Addresses are case-sensitive and must already be lower case: an
upper-case letter is refused, not folded, so one address never has two spellings. This module
knows only strings; it knows nothing of storage or of who holds an address.
"""

from __future__ import annotations

import re
from typing import Final, Literal

from switchboard.directory.errors import InvalidName

__all__ = ["MAX_ADDRESS_LENGTH", "Kind", "kind_of", "validate_address"]

Kind = Literal["agent", "service"]

MAX_ADDRESS_LENGTH: Final = 64
_WORD: Final = r"[a-z][a-z0-9-]*"
_AGENT: Final = re.compile(rf"@{_WORD}")
_SERVICE: Final = re.compile(rf"{_WORD}(?::{_WORD})?")


def validate_address(address: str) -> Kind:
    """Return the kind of ``address``, or raise ``InvalidName`` saying what the grammar wants."""
    if not isinstance(address, str) or not address:
        raise InvalidName("an address is a non-empty string such as '@researcher' or 'weather'")
    if len(address) > MAX_ADDRESS_LENGTH:
        raise InvalidName(
            f"address {address[:20]!r}... is {len(address)} characters; "
            f"at most {MAX_ADDRESS_LENGTH} are allowed"
        )
    if _AGENT.fullmatch(address):
        return "agent"
    if _SERVICE.fullmatch(address):
        return "service"
    if address.startswith("@"):
        raise InvalidName(
            f"agent address {address!r} must match @[a-z][a-z0-9-]* "
            "(lower case, e.g. '@researcher')"
        )
    raise InvalidName(
        f"service address {address!r} must be 'name' or 'owner:capability', each part "
        "matching [a-z][a-z0-9-]* (e.g. 'weather' or 'research:summarize')"
    )


def kind_of(address: str) -> Kind:
    """The kind of a valid address (``validate_address`` without the error text)."""
    return validate_address(address)
