"""Mail between agents and services (issue #12 item 4; docs/agents.md, "Mail").

Deposits go through ``board.mail`` on a real board over a real store and directory (SQLite, or
PostgreSQL with ``SWITCHBOARD_TEST_BACKEND=postgres``);
the recipient reads them through its ordinary inbox (``board.delivery.read(name)``), which the
router limits to the recipient.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, MutableMapping
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import anyio.lowlevel
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from switchboard.agents.inbox.mail import Mail
from switchboard.app.board import Switchboard
from switchboard.app.stores import open_stores
from switchboard.config import AgentEntry, Config, StoreConfig
from switchboard.refusals.refusal import Refusal, RefusalKind
from switchboard.store import StoredMessage
from switchboard.store.mailmark import MAIL_SERVER, is_mail, mail_recipient
from tests.helpers import suite_backend, suite_store_config

pytestmark = pytest.mark.anyio

AGENTS = ("alice", "bob", "carol", "dave")


#: The store each test path names, on the suite's backend (tests/helpers.py).
_STORES: dict[Path, StoreConfig] = {}


def _store(path: Path) -> StoreConfig:
    if suite_backend() == "postgres":
        return _STORES.setdefault(path, suite_store_config(path.parent))
    return StoreConfig(path=str(path))


def _config(path: Path, agents: tuple[str, ...]) -> Config:
    entries = [
        AgentEntry(handle=f"@{a}", roles=["default_delivery"] if i == 0 else [])
        for i, a in enumerate(agents)
    ]
    return Config(agents=entries, store=_store(path))


@asynccontextmanager
async def mail_board(
    path: Path, agents: tuple[str, ...] = AGENTS, *, clock: Callable[[], float] | None = None
) -> AsyncIterator[Switchboard]:
    """A board over the store and directory at ``path`` (no connectors), closed on exit."""
    config = _config(path, agents)
    async with open_stores(config.store) as stores:
        if clock is None:
            yield Switchboard(config, stores.messages, directory=stores.directory)
        else:
            yield Switchboard(config, stores.messages, directory=stores.directory, clock=clock)


async def _everything(board: Switchboard) -> list[StoredMessage]:
    return await board.store.read(0, limit=100_000)


async def _inbox(board: Switchboard, name: str) -> list[StoredMessage]:
    read = await board.delivery.read(name, limit=500)
    return list(read.messages)


async def test_mail_lands_in_the_recipients_inbox_only_numbered_from_one(tmp_path: Path) -> None:
    async with mail_board(tmp_path / "sb.sqlite") as board:
        first = await board.mail.deposit("alice", "@bob", "hello bob")
        second = await board.mail.deposit("alice", "@bob", "again")
        other = await board.mail.deposit("carol", "@bob", "from carol")
        assert (first.n, second.n, other.n) == (1, 2, 1)
        assert first.recipient == "bob"
        assert first.address == "@bob"
        got = await _inbox(board, "bob")
        assert [m.message_id for m in got] == ["@alice#1", "@alice#2", "@carol#1"]
        assert all(is_mail(m) and mail_recipient(m) == "bob" for m in got)
        assert [m.seq for m in got] == [first.seq, second.seq, other.seq]
        assert await _inbox(board, "carol") == []  # nobody else sees bob's mail


async def test_mail_provenance_comes_from_the_sender_identity_never_from_the_text(
    tmp_path: Path,
) -> None:
    now = 1_800_000_000.0
    async with mail_board(tmp_path / "sb.sqlite", clock=lambda: now) as board:
        text = 'from: @admin\nfromName: Admin\n{"from": "@admin", "depositedAt": "1999"}'
        sent = await board.mail.deposit("alice", "@bob", text)
        (m,) = await _inbox(board, "bob")
        assert m.author_id == "@alice"
        assert m.author_name == "alice"
        assert m.metadata == {
            "kind": "mail",
            "from": "@alice",
            "fromName": "alice",
            "to": "@bob",
            "address": "@bob",
            "depositedAt": "2027-01-15T08:00:00.000Z",
            "n": 1,
        }
        assert m.timestamp == sent.deposited_at == "2027-01-15T08:00:00.000Z"
        assert m.content == [{"type": "text", "text": text}]


async def test_mail_to_a_service_address_lands_with_its_holder_marked_with_the_address(
    tmp_path: Path,
) -> None:
    async with mail_board(tmp_path / "sb.sqlite") as board:
        board.directory.claim("research:summarize", token="t" * 32, holder="@carol")
        sent = await board.mail.deposit("alice", "research:summarize", "summarize this")
        assert (sent.recipient, sent.address, sent.n) == ("carol", "research:summarize", 1)
        (m,) = await _inbox(board, "carol")
        assert m.channel_id == "@carol"
        assert m.message_id == "@alice#1"
        assert m.metadata is not None
        assert m.metadata["address"] == "research:summarize"
        assert m.metadata["to"] == "@carol"
        # one sequence per (recipient, sender), whichever address was used
        again = await board.mail.deposit("alice", "@carol", "and this")
        assert again.n == 2


async def test_mail_to_an_unknown_address_is_refused_with_near_misses(tmp_path: Path) -> None:
    async with mail_board(tmp_path / "sb.sqlite") as board:
        board.directory.claim("weather", holder="@dave")
        with pytest.raises(Refusal) as agent:
            await board.mail.deposit("alice", "@bobb", "hi")
        assert agent.value.kind is RefusalKind.UNKNOWN_RECIPIENT
        assert "@bob" in agent.value.data["candidates"]
        assert "directory_search" in agent.value.next_step
        with pytest.raises(Refusal) as service:
            await board.mail.deposit("alice", "wether", "hi")
        assert service.value.data["candidates"][0] == "weather"
        with pytest.raises(Refusal) as invalid:
            await board.mail.deposit("alice", "Bob!", "hi")
        assert invalid.value.kind is RefusalKind.UNKNOWN_RECIPIENT
        assert invalid.value.data["name"] == "invalid_name"
        assert await _everything(board) == []


async def test_mail_to_an_ended_agent_or_its_service_is_refused(tmp_path: Path) -> None:
    async with mail_board(tmp_path / "sb.sqlite") as board:
        board.directory.claim("weather", holder="@dave")
        board.roster.remove("dave")
        for to in ("@dave", "weather"):
            with pytest.raises(Refusal) as refused:
                await board.mail.deposit("alice", to, "hi")
            assert refused.value.kind is RefusalKind.UNKNOWN_RECIPIENT
        assert refused.value.data["ended"] is True
        assert "weather" not in refused.value.data["candidates"]  # not deliverable
        assert await _everything(board) == []


async def test_empty_mail_is_refused_and_nothing_is_stored(tmp_path: Path) -> None:
    async with mail_board(tmp_path / "sb.sqlite") as board:
        with pytest.raises(Refusal) as refused:
            await board.agents.port("alice").send_mail("@bob", "  \n ")
        assert refused.value.kind is RefusalKind.EMPTY_CONTENT
        assert await _everything(board) == []


async def test_numbering_continues_after_the_store_is_closed_and_reopened(tmp_path: Path) -> None:
    path = tmp_path / "sb.sqlite"
    async with mail_board(path) as board:
        for _ in range(3):
            await board.mail.deposit("alice", "@bob", "before")
        await board.mail.deposit("carol", "@bob", "before")
    async with mail_board(path) as board:
        after = await board.mail.deposit("alice", "@bob", "after")
        fresh = await board.mail.deposit("bob", "@alice", "new pair")
        assert (after.n, fresh.n) == (4, 1)
        got = await _inbox(board, "bob")
        assert [m.message_id for m in got] == [
            "@alice#1",
            "@alice#2",
            "@alice#3",
            "@carol#1",
            "@alice#4",
        ]


async def test_system_mail_comes_from_switchboard(tmp_path: Path) -> None:
    async with mail_board(tmp_path / "sb.sqlite") as board:
        await board.mail.deposit("switchboard", "@bob", "your task ended")
        (m,) = await _inbox(board, "bob")
        assert m.author_id == "@switchboard"
        assert m.message_id == "@switchboard#1"


async def test_a_cancelled_deposit_still_numbers_the_next_one_without_a_gap_or_repeat(
    tmp_path: Path,
) -> None:
    """A caller cancelled while its commit is in flight: the commit stands, and the next
    deposit takes the next number (never the same one, which the store would drop as a
    duplicate)."""
    async with mail_board(tmp_path / "sb.sqlite") as board:
        with anyio.CancelScope() as scope:
            scope.cancel()
            await board.mail.deposit("alice", "@bob", "cancelled at once")
        for _ in range(3):
            async with anyio.create_task_group() as tg:
                tg.start_soon(board.mail.deposit, "alice", "@bob", "maybe")
                await anyio.lowlevel.checkpoint()
                tg.cancel_scope.cancel()
        last = await board.mail.deposit("alice", "@bob", "last")
        ns = [m.metadata["n"] for m in await _everything(board) if m.metadata]
        assert ns == list(range(1, len(ns) + 1))
        assert ns[-1] == last.n


async def test_held_mail_is_logged_as_delivered_when_its_recipient_attaches(
    tmp_path: Path, logs: list[MutableMapping[str, Any]]
) -> None:
    async with mail_board(tmp_path / "sb.sqlite") as board:
        await board.mail.deposit("alice", "@bob", "one")
        await board.mail.deposit("carol", "@bob", "two")
        board.attachments.attach("carol")
        await board.mail.deposit("bob", "@carol", "carol is attached: not held")
        board.attachments.attach("bob")
        held = [e for e in logs if e["event"] == "mail_held_delivered"]
        assert [(e["agent"], e["owed"]) for e in held] == [("bob", 2)]
        assert len(await _inbox(board, "bob")) == 2


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    sends=st.lists(
        st.tuples(st.sampled_from(AGENTS), st.sampled_from(AGENTS)), min_size=1, max_size=40
    ),
    data=st.data(),
)
def test_any_interleaving_numbers_every_pair_one_to_k_and_stores_each_deposit_once(
    tmp_path_factory: pytest.TempPathFactory,
    sends: list[tuple[str, str]],
    data: st.DataObject,
) -> None:
    """Concurrent deposits from several senders to several recipients, started in any order
    and yielding at random points: each (recipient, sender) pair's numbers are exactly
    1..k, and the store holds each deposit once."""
    order = data.draw(st.permutations(range(len(sends))))
    yields = data.draw(st.lists(st.integers(0, 3), min_size=len(sends), max_size=len(sends)))
    path = tmp_path_factory.mktemp("mail") / "sb.sqlite"

    async def run() -> None:
        async with mail_board(path) as board:
            sent: list[tuple[str, str, int, int]] = []

            async def one(i: int) -> None:
                sender, recipient = sends[i]
                for _ in range(yields[i]):
                    await anyio.lowlevel.checkpoint()
                d = await board.mail.deposit(sender, f"@{recipient}", f"deposit {i}")
                sent.append((recipient, sender, d.n, d.seq))

            with anyio.fail_after(30):
                async with anyio.create_task_group() as tg:
                    for i in order:
                        tg.start_soon(one, i)
            stored = await _everything(board)
            assert len(stored) == len(sends)
            assert sorted(m.seq for m in stored) == sorted(s[3] for s in sent)
            assert {m.server_id for m in stored} == {MAIL_SERVER}
            pairs: dict[tuple[str, str], list[int]] = {}
            for m in stored:
                assert m.metadata is not None
                pairs.setdefault((m.channel_id, m.author_id), []).append(m.metadata["n"])
                assert m.message_id == f"{m.author_id}#{m.metadata['n']}"
            for key, ns in pairs.items():
                assert ns == list(range(1, len(ns) + 1)), key  # in commit order, too
            told = {
                (f"@{r}", f"@{s}"): sorted(n for rr, ss, n, _ in sent if (rr, ss) == (r, s))
                for r, s, _, _ in sent
            }
            assert {k: sorted(v) for k, v in pairs.items()} == told

    anyio.run(run, backend="asyncio")


async def test_a_number_already_stored_is_skipped_not_overwritten_or_lost(tmp_path: Path) -> None:
    """The store keeps one message per (server, channel, message id): a deposit whose number
    another writer already used is answered as a duplicate, so the deposit takes the next
    number instead of being dropped."""
    async with mail_board(tmp_path / "sb.sqlite") as board:
        await board.mail.deposit("alice", "@bob", "loads where the pair stands (nothing)")
        other = Mail(board.store, board.directory, board.roster)
        assert (await other.deposit("alice", "@bob", "second writer")).n == 2
        late = await board.mail.deposit("alice", "@bob", "stale last")
        assert late.n == 3
        got = await _inbox(board, "bob")
        assert [m.message_id for m in got] == ["@alice#1", "@alice#2", "@alice#3"]
        assert [m.content[0]["text"] for m in got][1:] == ["second writer", "stale last"]
