"""How mail between agents sits in the message store: :data:`MAIL_SERVER` and its readers.

Mail is stored as messages of the reserved server id ``@mail`` (no connector id may start with
``@``), so it follows the inbox's at-least-once contract with no second delivery path: the
recipient's handle is the channel, ``<sender handle>#<n>`` the message id, and the metadata says
who sent it where (docs/agents.md, "Mail").

What it deliberately does not know: how mail is deposited or routed.
"""

from __future__ import annotations

from switchboard.store.records import StoredMessage

__all__ = ["MAIL_KIND", "MAIL_SERVER", "is_mail", "mail_recipient"]

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
