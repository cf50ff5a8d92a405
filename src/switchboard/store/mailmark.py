"""How mail between agents sits in the message store: :data:`MAIL_SERVER` and its readers.

Mail is stored as messages of the reserved server id ``@mail`` (no connector id may start with
``@``), so it follows the inbox's at-least-once contract with no second delivery path: the
recipient's handle is the channel, ``<sender handle>#<n>`` the message id, and the metadata says
who sent it where (docs/agents.md, "Mail").

What it deliberately does not know: how mail is deposited or routed.
"""

from __future__ import annotations

from collections.abc import Iterable

from switchboard.store.records import StoredMessage
from switchboard.store.wire import decode_body

__all__ = ["MAIL_KIND", "MAIL_SERVER", "highest_numbers_in", "is_mail", "mail_recipient"]

MAIL_SERVER = "@mail"
"""The server id under which mail is stored."""

MAIL_KIND = "mail"
"""``metadata["kind"]`` of a mail message."""


def is_mail(m: StoredMessage) -> bool:
    """Whether ``m`` is mail between agents."""
    return m.server_id == MAIL_SERVER


def mail_recipient(m: StoredMessage) -> str | None:
    """The recipient's name (handle without ``@``) of mail ``m``, or None when ``m`` is not
    mail."""
    if m.server_id != MAIL_SERVER:
        return None
    return m.channel_id[1:] if m.channel_id.startswith("@") else m.channel_id


def highest_numbers_in(bodies: Iterable[bytes]) -> dict[tuple[str, str], int]:
    """For every (channel id, author id) among the stored batch ``bodies``, the highest ``n`` of
    a message id ``<author id>#<n>`` (both backends read their rows, then ask this)."""
    found: dict[tuple[str, str], int] = {}
    for body in bodies:
        for m in decode_body(body):
            author = m.get("author")
            author_id = author.get("id") if isinstance(author, dict) else None
            message_id = m.get("messageId")
            if not isinstance(author_id, str) or not isinstance(message_id, str):
                continue
            head, sep, tail = message_id.rpartition("#")
            if not sep or head != author_id or not (tail.isascii() and tail.isdigit()):
                continue
            key = (str(m.get("channelId", "")), author_id)
            found[key] = max(found.get(key, 0), int(tail))
    return found
