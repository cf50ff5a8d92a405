"""Mail between agents and services: :class:`Mail` deposits one message into one inbox.

``to`` is an agent address or a service address looked up in the directory; provenance comes
from the sender's identity, never from the text; each (recipient, sender) pair numbers its
deposits from 1 without gaps, across restarts (docs/agents.md, "Mail"). A deposit is one
message in one store commit, read like any message under the inbox's at-least-once contract.

What it deliberately does not know: who may read an inbox (routing), MCP, sessions.
"""

from __future__ import annotations

import difflib
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Final

import anyio
import structlog

from switchboard.agents.roster.attach import Attachments
from switchboard.agents.roster.roster import SYSTEM_SENDER, Roster
from switchboard.directory import (
    DirectoryError,
    DirectoryStore,
    InvalidName,
    NotFound,
    validate_address,
)
from switchboard.refusals.refusal import Refusal, RefusalKind, directory_refusal
from switchboard.store import (
    AppendResult,
    IncomingRecord,
    MessageStoreProtocol,
    NumberedDeposits,
    StoredMessage,
)
from switchboard.store.mailmark import MAIL_KIND, MAIL_SERVER

__all__ = ["Deposit", "Mail"]

log = structlog.get_logger(__name__)


_NEAR_MISSES: Final = 5
_DIRECTORY_SCAN: Final = 5000
_DUPLICATE_RETRIES: Final = 3


@dataclass(frozen=True, slots=True)
class Deposit:
    """What one deposit did.

    Attributes:
        seq: The message's place in the store (``message_get(seq)`` fetches it).
        n: Its number in the (recipient, sender) sequence, from 1 without gaps.
        recipient: The recipient's name (handle without ``@``).
        address: The address it was sent to (a service address, or the recipient's handle).
        deposited_at: When it was deposited, ISO 8601 (UTC).
    """

    seq: int
    n: int
    recipient: str
    address: str
    deposited_at: str


@dataclass(frozen=True, slots=True)
class _Party:
    name: str
    handle: str
    display: str


def _iso(t: float) -> str:
    return (
        datetime.fromtimestamp(t, tz=UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
    )


def _stored(seq: int, r: IncomingRecord, received_at: float) -> StoredMessage:
    return StoredMessage(
        seq=seq,
        server_id=r.server_id,
        channel_id=r.channel_id,
        message_id=r.message_id,
        thread_id=r.thread_id,
        author_id=r.author_id,
        author_name=r.author_name,
        timestamp=r.timestamp,
        content=r.content,
        metadata=r.metadata,
        tags=r.tags,
        received_at=received_at,
    )


class Mail:
    """Deposits mail into agents' inboxes.

    What it knows (docs/agents.md, "Mail"):

    - **Addresses.** ``to`` is an agent address (``@bob``: a live identity of the roster) or a
      service address (``weather``, ``research:summarize``: looked up in the directory, and the mail
      lands with the identity that holds it, marked with the address it was sent to). An address
      nobody live answers to is refused (``unknown-recipient``) with near misses among the roster's
      handles and the directory's deliverable addresses.
    - **Provenance.** ``from``, ``fromName`` and ``depositedAt`` come from the sender's identity
      (the roster; ``switchboard`` for the host's own mail) and the clock, never from the text.
    - **Numbering.** Each (recipient, sender) pair numbers its deposits ``n`` = 1, 2, ... without
      gaps or repeats: one lock per pair, ``n = last + 1``, one store commit, and only after the
      commit ``last = n``. The commit is shielded from cancellation (a cancelled caller's write may
      still commit, so ``last`` must follow it). ``last`` is read from the store on first use
      (:meth:`~switchboard.store.MailNumbers.highest_numbers`, one read of the ``@mail`` batches for
      every pair at once), so numbering continues across restarts. A store several instances
      share (:class:`~switchboard.store.NumberedDeposits`) numbers the deposit inside its commit
      instead, from one counter row per pair.
    - **Atomic and durable.** A deposit is one message in one store commit
      (:mod:`switchboard.store.mailmark` says how it is stored); once :meth:`Mail.deposit` returns
      it is in the recipient's inbox for good, and it is read like any message, under the inbox's
      at-least-once contract. Mail to an agent with no session is simply held there until the agent
      reads.
    - **Arrivals and held mail.** A committed deposit is told to ``arrived`` (the inbox watchers,
      which push it to the recipient's connections; deposits emit no host event). Mail to an agent
      with no session attached is counted as held and logged (``mail_held_delivered``, with how
      many) when the agent attaches; what it owes is in its inbox either way.
    """

    __slots__ = (
        "_arrived",
        "_attachments",
        "_clock",
        "_directory",
        "_held",
        "_last",
        "_load_lock",
        "_loaded",
        "_locks",
        "_roster",
        "_store",
    )

    def __init__(
        self,
        store: MessageStoreProtocol,
        directory: DirectoryStore,
        roster: Roster,
        *,
        attachments: Attachments | None = None,
        arrived: Callable[[Sequence[StoredMessage]], None] | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        """Args:
        attachments: which agents have a session; mail deposited while its recipient has
            none is counted as held, and logged (``mail_held_delivered``) when it attaches.
        arrived: told each deposit once it is committed (the inbox watchers'
            :meth:`~switchboard.agents.inbox.watch.InboxWatchers.arrived`: pushes); it must
            not block.
        """
        self._store = store
        self._arrived = arrived
        self._attachments = attachments
        self._held: dict[str, int] = {}
        if attachments is not None:
            attachments.watch(self._attached)
        self._directory = directory
        self._roster = roster
        self._clock = clock
        self._locks: dict[tuple[str, str], anyio.Lock] = {}
        self._last: dict[tuple[str, str], int] = {}
        self._loaded = False
        self._load_lock = anyio.Lock()

    def _attached(self, name: str) -> None:
        """An agent attached: the mail held for it is in its inbox, read like any message."""
        held = self._held.pop(name, 0)
        if held:
            log.info("mail_held_delivered", agent=name, owed=held)

    # -- who ---------------------------------------------------------------------------------

    def _sender(self, sender: str) -> _Party:
        identity = self._roster.get(sender)
        if identity is not None:
            return _Party(identity.name, identity.handle, identity.name)
        name = sender[1:] if sender.startswith("@") else sender
        display = "Switchboard" if name == SYSTEM_SENDER else name
        return _Party(name, f"@{name}", display)

    def _deliverable(self) -> list[str]:
        """Every address mail can go to now: the roster's handles, then the directory's
        addresses whose holder is live (at most a bounded number of entries are looked at)."""
        found = [i.handle for i in self._roster]
        offset = 0
        while offset < _DIRECTORY_SCAN:
            page = self._directory.list(limit=500, offset=offset)
            for entry in page.entries:
                live = entry.holder is not None and self._roster.get(entry.holder) is not None
                if entry.kind == "service" and live:
                    found.append(entry.address)
            offset += len(page.entries)
            if not page.entries or offset >= page.total:
                break
        return found

    def _unknown(self, to: str, why: str, **facts: Any) -> Refusal:
        candidates = difflib.get_close_matches(to, self._deliverable(), n=_NEAR_MISSES, cutoff=0.5)
        hint = f" Did you mean {', '.join(candidates)}?" if candidates else ""
        return Refusal(
            RefusalKind.UNKNOWN_RECIPIENT,
            f"{why}, so nothing was sent.{hint}",
            address=to,
            candidates=candidates,
            **facts,
        )

    def _resolve(self, to: str) -> tuple[_Party, str]:
        """The live recipient ``to`` reaches, and the address as sent to.

        Raises:
            Refusal: ``unknown-recipient`` (with near-miss ``candidates``).
        """
        address = to.strip()
        try:
            if validate_address(address) == "agent":
                entry = None  # agent addresses are the roster's
            else:
                entry = self._directory.lookup(address)
        except InvalidName as exc:
            raise self._unknown(address, str(exc), code=exc.code, name=exc.name) from None
        except NotFound:
            raise self._unknown(address, f"no agent or service answers to {address!r}") from None
        except DirectoryError as exc:
            raise directory_refusal(exc, address) from None
        if entry is None:
            identity = self._roster.get(address)
            if identity is None:
                raise self._unknown(address, f"no live agent is {address}")
        else:
            identity = self._roster.get(entry.holder) if entry.holder is not None else None
            if identity is None:
                who = f"its holder {entry.holder} has ended" if entry.holder else "nobody holds it"
                raise self._unknown(address, f"{address!r} is listed, but {who}", ended=True)
        return _Party(identity.name, identity.handle, identity.name), address

    # -- numbering ---------------------------------------------------------------------------

    async def _load(self) -> None:
        """Read, once, where every (recipient, sender) sequence stands in the store."""
        async with self._load_lock:
            if not self._loaded:
                stored = await self._store.highest_numbers(MAIL_SERVER)
                for key, n in stored.items():
                    self._last[key] = max(self._last.get(key, 0), n)
                self._loaded = True

    async def deposit(self, sender: str, to: str, text: str) -> Deposit:
        """Deposit ``text`` (not empty: an agent's empty mail is refused by its port) from
        ``sender`` (an agent name, or ``switchboard``) to the address ``to``, atomically and
        durably (see :class:`Mail`).

        Raises:
            Refusal: ``unknown-recipient``.
            StoreError: the store did not commit it (nothing was deposited).
        """
        frm = self._sender(sender)
        recipient, address = self._resolve(to)
        if isinstance(self._store, NumberedDeposits):
            result, n, record, when = await self._numbered(
                self._store, frm, recipient, address, text
            )
        else:
            result, n, record, when = await self._counted(frm, recipient, address, text)
        if self._arrived is not None:
            self._arrived([_stored(result.seq, record, when)])
        attachments = self._attachments
        if attachments is not None and not attachments.count(recipient.name):
            self._held[recipient.name] = self._held.get(recipient.name, 0) + 1
        log.debug(
            "mail_deposited",
            sender=frm.handle,
            to=recipient.handle,
            address=address,
            n=n,
            seq=result.seq,
        )
        return Deposit(result.seq, n, recipient.name, address, _iso(when))

    def _record(
        self, frm: _Party, recipient: _Party, address: str, text: str, n: int, when: float
    ) -> IncomingRecord:
        at = _iso(when)
        return IncomingRecord(
            server_id=MAIL_SERVER,
            channel_id=recipient.handle,
            message_id=f"{frm.handle}#{n}",
            thread_id=None,
            author_id=frm.handle,
            author_name=frm.display,
            timestamp=at,
            content=[{"type": "text", "text": text}],
            metadata={
                "kind": MAIL_KIND,
                "from": frm.handle,
                "fromName": frm.display,
                "to": recipient.handle,
                "address": address,
                "depositedAt": at,
                "n": n,
            },
        )

    async def _numbered(
        self, store: NumberedDeposits, frm: _Party, recipient: _Party, address: str, text: str
    ) -> tuple[AppendResult, int, IncomingRecord, float]:
        """A store shared by several processes numbers the deposit inside its commit."""
        when = self._clock()
        template = self._record(frm, recipient, address, text, 0, when)
        # A cancelled caller's write may still commit: wait for it, whatever happens.
        with anyio.CancelScope(shield=True):
            result, n = await store.submit_numbered(template, received_at=when)
        return result, n, self._record(frm, recipient, address, text, n, when), when

    async def _counted(
        self, frm: _Party, recipient: _Party, address: str, text: str
    ) -> tuple[AppendResult, int, IncomingRecord, float]:
        """This process is the store's one writer: it numbers the deposit itself."""
        await self._load()
        key = (recipient.handle, frm.handle)
        lock = self._locks.get(key)
        if lock is None:
            lock = self._locks[key] = anyio.Lock()
        async with lock:
            for _ in range(_DUPLICATE_RETRIES):
                n = self._last.get(key, 0) + 1
                when = self._clock()
                record = self._record(frm, recipient, address, text, n, when)
                # A cancelled caller's write may still commit: wait for it, whatever happens.
                with anyio.CancelScope(shield=True):
                    (result,) = await self._store.append([record], received_at=when)
                self._last[key] = n
                if not result.duplicate:
                    break
                log.warning("mail_number_taken", to=recipient.handle, sender=frm.handle, n=n)
            else:
                raise Refusal(
                    RefusalKind.NOT_RECORDED,
                    "the mail could not be numbered, so nothing was sent",
                    address=address,
                )
        return result, n, record, when
