"""The Matrix bridge: one Matrix account as an MCPL connector on :mod:`switchboard.connector`.

:class:`MatrixBridge` logs in once the host's policy is in force, syncs, registers each joined
room as a channel and follows joins, renames and leaves; each ``/sync`` is one batch, and the
sync token is written only once the host answered for every message of it, so a restart
neither skips nor repeats a message (docs/bridges/matrix.md). Encrypted rooms are refused;
publishing, typing, receipts, joins and leaves map to the client-server API.

What it deliberately does not know: the wire or the grant rules (the SDK enforces them).
Library choice: mautrix's ``ClientAPI``; the sync loop is the bridge's own, because mautrix's
``Syncer`` cannot say when a batch has been delivered, which the sync-token rule needs.
"""

from __future__ import annotations

import contextlib
import json
import time
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from typing import Any, Final

import aiohttp
import anyio
import structlog
from mautrix.api import HTTPAPI, Method, Path
from mautrix.client import ClientAPI
from mautrix.errors import (
    MatrixConnectionError,
    MatrixError,
    MatrixRequestError,
    MForbidden,
    MLimitExceeded,
    MUnknownToken,
)
from mautrix.types import (
    EventID,
    EventType,
    LoginType,
    MessageType,
    RoomAlias,
    RoomID,
    TextMessageEventContent,
    UserID,
)

import switchboard
from switchboard.connector import ChannelNotRegistered, Connector, NotGranted, NotReady
from switchboard.protocol import (
    AcknowledgeParams,
    AcknowledgeResult,
    ChannelDescriptor,
    ChannelNotPermitted,
    ChannelOpenFailed,
    IncomingMessage,
    OpenParams,
    OpenResult,
    OutgoingChunkParams,
    PublishParams,
    TextContent,
    TypingParams,
    UnknownChannel,
)
from switchboard.transport import RpcError, TransportError

from .config import MatrixConfig
from .events import MESSAGE_TYPES, EventContext, reply_target, to_incoming
from .rooms import DirectRooms, Room
from .state import Session, StateDir

__all__ = ["EXIT_CONFIG", "MatrixBridge"]

log = structlog.get_logger(__name__)

EXIT_CONFIG: Final = 78
"""The exit code when the homeserver refuses the configured credentials (EX_CONFIG)."""

_TYPING_MS: Final = 20_000
_TYPING_REFRESH: Final = 5.0
_PUBLISH_WITHIN: Final = 20.0
_INCOMING_BATCH: Final = 100
_GAP_PAGES: Final = 50
_HISTORY_PAGES: Final = 10
_REMEMBERED: Final = 4096
_E2EE_REASON: Final = "this bridge does not support end-to-end encrypted rooms"


class _Fatal(Exception):
    """The homeserver refused the configured credentials; retrying cannot help."""


def _transient(exc: BaseException) -> bool:
    """Whether trying again later may succeed (the homeserver is down, busy or slow)."""
    if isinstance(exc, MatrixRequestError):
        return exc.http_status >= 500 or exc.http_status == 429
    return isinstance(exc, MatrixConnectionError | aiohttp.ClientError | TimeoutError | OSError)


def _section(data: Mapping[str, Any], *path: str) -> Mapping[str, Any]:
    for key in path:
        value = data.get(key)
        data = value if isinstance(value, Mapping) else {}
    return data


def _events(data: Mapping[str, Any], *path: str) -> list[Mapping[str, Any]]:
    events = _section(data, *path).get("events")
    return [e for e in events if isinstance(e, Mapping)] if isinstance(events, list) else []


class _Backoff:
    """Pauses that double from half a second up to ``maximum``."""

    def __init__(self, maximum: float) -> None:
        self.maximum = maximum
        self.delay = 0.5

    async def wait(self) -> None:
        await anyio.sleep(self.delay)
        self.delay = min(self.delay * 2, self.maximum)

    def reset(self) -> None:
        self.delay = 0.5


class MatrixBridge(Connector):
    """The Matrix bridge.

    What it knows: how the bridge lives beside one host connection (docs/bridges/matrix.md).

    - Once the host's policy is in force (``on_ready``) it logs in (a given access token, or a
      password login kept in the state directory), checks with ``whoami`` that the token is the
      configured user's, and syncs. The first ``/sync`` asks for the full state of every joined
      room, continuing from the saved sync token when there is one; each room becomes a channel
      (:mod:`.rooms`) in one ``channels/register``, and after that joins, renames and leaves arrive
      as ``channels/changed`` (added, updated, removed).
    - Each later ``/sync`` (a long poll) is handled as one batch, in this order: account data
      (``m.direct``), room state and timelines, then channel additions and updates, then the
      messages as ``channels/incoming`` (:mod:`.events`), then removals, then invitations. Only when
      the host has answered for every message of the batch is the sync token written to disk
      (:mod:`.state`): a restart then neither skips nor repeats a message. A timeline the homeserver
      cut short (``limited``) is filled by paging back to the previous token.
    - The first start of a fresh state directory delivers no history: rooms are registered and what
      was said before the bridge existed stays in Matrix (``channels/open`` with ``history`` fetches
      it on request).
    - Messages go to the host only while ``channels.incoming`` is granted; what arrives while it is
      not is dropped (the grant says the host does not want it). A channel the host closed gets only
      messages addressed to the bridge (a mention, a reply to it, a direct chat).
    - End-to-end encrypted rooms are refused: an invitation to one is declined with a reason, a
      joined one is never registered, and a room that turns encryption on is removed; each with a
      warning in the log. The bridge never shows encrypted events as text.
    - When the homeserver cannot be reached the bridge keeps trying, with a pause that doubles up to
      ``MATRIX_RETRY_MAX_SECONDS``, and continues from its sync token when it is back: nothing said
      meanwhile is lost. A rejected access token ends the process (exit code 78) unless a password
      can log in again.
    - Publishing sends ``m.room.message`` (``m.text``) and answers with the event id; a send that
      fails on the way is retried with the same transaction id, which the homeserver deduplicates,
      for up to 20 s. A refusal by the homeserver (no permission, too large) is ``-32017`` with the
      reason: nothing was posted. Typing maps to Matrix typing (on for 20 s, refreshed by the host,
      and by stream chunks), an acknowledgement to a read receipt.
    - ``channels/open`` of a room the bridge is not in joins it by id or alias (when
      ``MATRIX_JOIN_ON_OPEN``); ``channels/close`` leaves the bridge in the room.

    Args:
        config: the checked configuration.
        access_token: the token to use (from ``MATRIX_ACCESS_TOKEN`` or its file), or
            ``None`` to log in with the configured password.
    """

    def __init__(self, config: MatrixConfig, access_token: str | None) -> None:
        super().__init__("switchboard-matrix", switchboard.__version__, channels=True)
        self.config = config
        self.access_token = access_token
        self.state = StateDir(config.state_dir, config.user_id, config.homeserver)
        self.own = config.user_id
        self.api: ClientAPI | None = None
        self.rooms: dict[str, Room] = {}
        self.direct = DirectRooms()
        self._sent: OrderedDict[str, None] = OrderedDict()
        self._replies: OrderedDict[str, bool] = OrderedDict()
        self._refused: set[str] = set()
        self._warned: set[str] = set()
        self._invites: set[str] = set()
        self._typing_at: dict[str, float] = {}
        self._unannounced: set[str] = set()
        self._said_not_granted = False
        self._log = log.bind(user=config.user_id)

    # -- the connection's life -------------------------------------------------------------------

    async def on_ready(self) -> None:
        """Start bridging once the host's policy is in force."""
        self.start_soon(self._bridge)

    async def _bridge(self) -> None:
        if not self.state.open():
            self._log.warning(
                "matrix_state_dir_shared",
                state_dir=str(self.state.path),
                detail="another switchboard-matrix uses this state directory; this one will "
                "not save the sync token",
            )
        timeout = aiohttp.ClientTimeout(
            total=None, sock_connect=15, sock_read=self.config.sync_timeout_ms / 1000 + 30
        )
        try:
            async with aiohttp.ClientSession(timeout=timeout) as session:
                http = HTTPAPI(
                    self.config.homeserver, "", client_session=session, default_retry_count=0
                )
                self.api = ClientAPI(UserID(self.own), api=http)
                try:
                    await self._login()
                    await self._sync_forever()
                except _Fatal as exc:
                    self._log.error("matrix_credentials_refused", reason=str(exc))
                    self.stop(EXIT_CONFIG)
                except TransportError as exc:  # the host went away; the connection is ending
                    self._log.info("matrix_host_gone", error=str(exc))
        finally:
            self.api = None
            self.state.close()

    # -- logging in ----------------------------------------------------------------------------

    async def _login(self) -> None:
        api = self._client()
        backoff = _Backoff(self.config.retry_max_seconds)
        token = self.access_token
        if token is None:
            kept = self.state.session()
            token = kept.access_token if kept is not None else None
        while True:
            try:
                if token is None:
                    token = await self._password_login()
                api.api.token = token
                who = await api.whoami()
            except MUnknownToken as exc:
                if self.access_token is not None or self.config.password is None:
                    raise _Fatal(f"the homeserver does not accept the access token: {exc}") from exc
                self.state.forget_session()
                token = None
                continue
            except MatrixRequestError as exc:
                if _transient(exc):
                    self._unreachable(exc)
                    await backoff.wait()
                    continue
                raise _Fatal(f"the homeserver refused the login: {exc}") from exc
            except Exception as exc:
                if not _transient(exc):
                    raise
                self._unreachable(exc)
                await backoff.wait()
                continue
            if who.user_id != self.own:
                raise _Fatal(
                    f"the access token belongs to {who.user_id}, not to MATRIX_USER_ID {self.own}"
                )
            if who.device_id:
                api.device_id = who.device_id
            self._log.info("matrix_logged_in", homeserver=self.config.homeserver)
            return

    async def _password_login(self) -> str:
        api = self._client()
        password = self.config.password
        assert password is not None
        try:
            answer = await api.login(
                identifier=UserID(self.own),
                login_type=LoginType.PASSWORD,
                password=password,
                device_name=self.config.device_name,
            )
        except MForbidden as exc:
            raise _Fatal(f"the homeserver refused MATRIX_PASSWORD: {exc}") from exc
        self.state.save_session(Session(answer.access_token, answer.device_id))
        self._log.info("matrix_password_login", device=answer.device_id)
        return answer.access_token

    def _client(self) -> ClientAPI:
        if self.api is None:
            raise RuntimeError("not connected to the homeserver")
        return self.api

    def _unreachable(self, exc: BaseException) -> None:
        self._log.warning("matrix_unreachable", error=str(exc) or type(exc).__name__)

    # -- syncing -------------------------------------------------------------------------------

    def _filter(self) -> str:
        events = {"limit": self.config.timeline_limit}
        return json.dumps(
            {
                "presence": {"types": []},
                "account_data": {"types": ["m.direct"]},
                "room": {
                    "timeline": events,
                    "ephemeral": {"types": []},
                    "account_data": {"types": []},
                },
            }
        )

    async def _sync(self, since: str | None, *, full_state: bool, timeout_ms: int) -> Any:
        query = {"filter": self._filter(), "timeout": str(timeout_ms)}
        if since:
            query["since"] = since
        if full_state:
            query["full_state"] = "true"
        return await self._client().api.request(
            Method.GET, Path.v3.sync, query_params=query, retry_count=0
        )

    async def _sync_forever(self) -> None:
        since = self.state.sync_token()
        first = True
        backoff = _Backoff(self.config.retry_max_seconds)
        outage: float | None = None
        while True:
            try:
                data = await self._sync(
                    since, full_state=first, timeout_ms=0 if first else self.config.sync_timeout_ms
                )
                if not isinstance(data, Mapping) or not isinstance(data.get("next_batch"), str):
                    raise MatrixConnectionError("the homeserver answered /sync without next_batch")
                await self._handle(data, since, first=first)
            except MUnknownToken as exc:
                if self.access_token is not None or self.config.password is None:
                    raise _Fatal(f"the homeserver no longer accepts the token: {exc}") from exc
                self.state.forget_session()
                await self._login()
                continue
            except _Redeliver as exc:
                self._log.warning("matrix_delivery_deferred", reason=str(exc))
                await backoff.wait()
                continue
            except Exception as exc:
                if isinstance(exc, TransportError) or not _transient(exc):
                    raise
                if outage is None:
                    outage = time.monotonic()
                    self._unreachable(exc)
                await backoff.wait()
                continue
            if outage is not None:
                self._log.info(
                    "matrix_reconnected", after_seconds=round(time.monotonic() - outage, 1)
                )
                outage = None
            backoff.reset()
            since = str(data["next_batch"])
            self.state.save_sync_token(since)
            first = False

    async def _handle(self, data: Mapping[str, Any], since: str | None, *, first: bool) -> None:
        """One sync batch, in the order described in the module docstring."""
        # Rooms whose last announcement failed are offered again with this batch.
        touched: dict[str, None] = dict.fromkeys(sorted(self._unannounced))
        self._unannounced.clear()
        for event in _events(data, "account_data"):
            if event.get("type") == "m.direct" and isinstance(event.get("content"), Mapping):
                touched.update(dict.fromkeys(self.direct.load(event["content"])))
        rooms = _section(data, "rooms")
        pending: list[tuple[str, Mapping[str, Any]]] = []
        for room_id, section in _section(rooms, "join").items():
            if not isinstance(section, Mapping):
                continue
            room = self.rooms.get(room_id)
            if room is None:
                room = self.rooms[room_id] = Room(room_id)
                touched[room_id] = None
            for event in _events(section, "state"):
                if room.apply_state(event):
                    touched[room_id] = None
            timeline = _section(section, "timeline")
            gap_before = timeline.get("prev_batch") if timeline.get("limited") is True else None
            if since is not None and isinstance(gap_before, str):
                pending += [(room_id, e) for e in await self._fill_gap(room_id, gap_before, since)]
            for event in _events(section, "timeline"):
                if "state_key" in event:
                    if room.apply_state(event):
                        touched[room_id] = None
                elif event.get("type") in MESSAGE_TYPES or event.get("type") == "m.room.encrypted":
                    pending.append((room_id, event))
        left: list[str] = []
        for room_id, section in _section(rooms, "leave").items():
            if room_id not in self.rooms or not isinstance(section, Mapping):
                continue
            for event in _events(section, "timeline"):
                if "state_key" not in event and event.get("type") in MESSAGE_TYPES:
                    pending.append((room_id, event))
            left.append(room_id)

        await self._announce(touched, left, first=first)
        if since is not None or not first:
            await self._deliver(pending)
        await self._remove(left)
        for room_id, section in _section(rooms, "invite").items():
            if isinstance(section, Mapping):
                await self._consider_invite(room_id, section)

    async def _fill_gap(self, room_id: str, prev_batch: str, since: str) -> list[Mapping[str, Any]]:
        """The messages between the previous token and a cut-short timeline, oldest first."""
        api = self._client()
        found: list[Mapping[str, Any]] = []
        token = prev_batch
        for _ in range(_GAP_PAGES):
            page = await api.api.request(
                Method.GET,
                Path.v3.rooms[RoomID(room_id)].messages,
                query_params={"from": token, "to": since, "dir": "b", "limit": "100"},
                retry_count=0,
            )
            chunk = page.get("chunk") if isinstance(page, Mapping) else None
            if not isinstance(chunk, list) or not chunk:
                break
            found += [
                e
                for e in chunk
                if isinstance(e, Mapping)
                and "state_key" not in e
                and e.get("type") in MESSAGE_TYPES
            ]
            end = page.get("end")
            if not isinstance(end, str) or end == token:
                break
            token = end
        found.reverse()
        if found:
            self._log.info("matrix_gap_filled", room=room_id, messages=len(found))
        return found

    # -- channels ------------------------------------------------------------------------------

    def _descriptor(self, room: Room) -> ChannelDescriptor:
        return room.descriptor(self.own, self.direct.partner(room.room_id))

    def _refuse_encrypted(self, room_id: str) -> None:
        if room_id not in self._warned:
            self._warned.add(room_id)
            self._log.warning(
                "matrix_room_encrypted_refused",
                room=room_id,
                detail="end-to-end encrypted rooms are not bridged; the room is not registered",
            )

    async def _announce(
        self, touched: Mapping[str, None], left: Sequence[str], *, first: bool
    ) -> None:
        added: list[ChannelDescriptor] = []
        updated: list[ChannelDescriptor] = []
        removed: list[str] = []
        gone = set(left)
        for room_id in touched:
            room = self.rooms.get(room_id)
            if room is None or room_id in gone or room_id in self._refused or room.space:
                continue
            if room.encrypted:
                self._refuse_encrypted(room_id)
                if room_id in self.channels:
                    removed.append(room_id)
                continue
            descriptor = self._descriptor(room)
            known = self.channels.get(room_id)
            if known is None:
                added.append(descriptor)
            elif known != descriptor:
                updated.append(descriptor)
        if not (added or updated or removed):
            return
        if not self.allows("channels.register"):
            # Kept for a later grant; said once, not at every sync.
            if not self._said_not_granted:
                self._said_not_granted = True
                self._log.info(
                    "matrix_channels_not_announced", reason="channels.register not granted"
                )
            self._unannounced.update(d.id for d in [*added, *updated])
            return
        try:
            if first and not removed:
                answers = await self.register([*added, *updated])
            else:
                answers = await self.changed(added=added, updated=updated, removed=removed)
        except (NotGranted, NotReady, RpcError) as exc:
            # Not announced now; offered again with the next batch (a removal was applied
            # locally by the SDK before it asked, and a later batch cannot repeat it).
            self._unannounced.update(d.id for d in [*added, *updated])
            self._log.warning("matrix_channels_not_announced", reason=str(exc))
            return
        for answer in answers:
            if not answer.accepted and answer.id is not None:
                self._refused.add(answer.id)
                self._log.info("matrix_channel_refused", room=answer.id, reason=answer.reason)
        if added or removed:
            self._log.info(
                "matrix_channels",
                added=[d.id for d in added],
                updated=[d.id for d in updated],
                removed=removed,
            )

    async def _remove(self, left: Sequence[str]) -> None:
        removed = [room_id for room_id in left if room_id in self.channels]
        for room_id in left:
            self.rooms.pop(room_id, None)
            self._typing_at.pop(room_id, None)
        if removed and self.allows("channels.register"):
            try:
                await self.changed(removed=removed)
            except (NotGranted, NotReady, RpcError) as exc:
                self._log.warning("matrix_channels_not_removed", rooms=removed, reason=str(exc))
                return
            self._log.info("matrix_channels", removed=removed)

    # -- messages ------------------------------------------------------------------------------

    async def _replies_to_own(self, room_id: str, event: Mapping[str, Any]) -> bool:
        target = reply_target(event)
        if target is None:
            return False
        if target in self._sent:
            return True
        known = self._replies.get(target)
        if known is not None:
            return known
        try:
            original = await self._client().api.request(
                Method.GET, Path.v3.rooms[RoomID(room_id)].event[EventID(target)], retry_count=0
            )
        except MatrixRequestError:
            answer = False  # gone or not visible: it cannot be shown as ours
        else:
            answer = isinstance(original, Mapping) and original.get("sender") == self.own
        _remember(self._replies, target, answer)
        return answer

    async def _deliver(self, pending: Sequence[tuple[str, Mapping[str, Any]]]) -> None:
        batch: list[IncomingMessage] = []
        seen: set[str] = set()
        for room_id, event in pending:
            event_id = event.get("event_id")
            if not isinstance(event_id, str) or event_id in seen:
                continue
            seen.add(event_id)
            room = self.rooms.get(room_id)
            if room is None or room_id not in self.channels:
                continue
            if event.get("type") == "m.room.encrypted":
                self._refuse_encrypted(room_id)
                continue
            context = EventContext(
                own_user_id=self.own,
                room=room,
                partner=self.direct.partner(room_id),
                reply_to_own=await self._replies_to_own(room_id, event),
            )
            message = await to_incoming(event, context)
            if message is None:
                continue
            if not self.channels.is_open(room_id) and "chat:addressed" not in (message.tags or ()):
                continue
            batch.append(message)
        if not batch:
            return
        if not self.allows("channels.incoming"):
            self._log.info(
                "matrix_messages_not_delivered",
                count=len(batch),
                reason="channels.incoming not granted",
            )
            return
        for start in range(0, len(batch), _INCOMING_BATCH):
            chunk = batch[start : start + _INCOMING_BATCH]
            try:
                results = await self.send_incoming(chunk)
            except (NotGranted, NotReady, ChannelNotRegistered) as exc:
                self._log.info("matrix_messages_not_delivered", count=len(chunk), reason=str(exc))
                return
            except RpcError as exc:
                # The host refused the whole batch (busy, rate-limited): nothing may be
                # skipped, so the sync is repeated from the same token.
                raise _Redeliver(str(exc)) from exc
            refused = [r.message_id for r in results if not r.accepted]
            if refused:
                self._log.info("matrix_messages_refused_by_host", messages=refused)

    # -- invitations ---------------------------------------------------------------------------

    async def _consider_invite(self, room_id: str, section: Mapping[str, Any]) -> None:
        if room_id in self._invites:
            return
        inviter: str | None = None
        direct = encrypted = False
        for event in _events(section, "invite_state"):
            kind = event.get("type")
            if kind == "m.room.member" and event.get("state_key") == self.own:
                sender = event.get("sender")
                inviter = sender if isinstance(sender, str) else None
                content = event.get("content")
                direct = isinstance(content, Mapping) and content.get("is_direct") is True
            elif kind == "m.room.encryption":
                encrypted = True
        if inviter is None:
            return
        if not self.config.accept_invites.allows(inviter):
            self._invites.add(room_id)
            self._log.info(
                "matrix_invite_ignored",
                room=room_id,
                inviter=inviter,
                accepting=self.config.accept_invites.describe(),
            )
            return
        if not self.allows("channels.register"):
            self._log.info(
                "matrix_invite_ignored", room=room_id, reason="channels.register not granted"
            )
            return
        self._invites.add(room_id)
        api = self._client()
        try:
            if encrypted:
                self._refuse_encrypted(room_id)
                await api.leave_room(RoomID(room_id), reason=_E2EE_REASON)
                return
            if direct:
                content = self.direct.with_room(inviter, room_id)
                if content is not None:
                    self.direct.load(content)
                    payload: dict[str, Any] = dict(content)
                    await api.set_account_data(EventType.find("m.direct"), payload)
            await api.join_room_by_id(RoomID(room_id))
        except Exception as exc:
            if _transient(exc):
                self._invites.discard(room_id)  # tried again when the sync is repeated
                raise
            if not isinstance(exc, MatrixError):
                raise
            self._log.warning("matrix_invite_failed", room=room_id, error=str(exc))
            return
        self._log.info("matrix_invite_accepted", room=room_id, inviter=inviter, direct=direct)

    # -- what the host asks --------------------------------------------------------------------

    async def on_publish(self, params: PublishParams) -> str:
        """Post the text in the room; the event id is the message id."""
        room_id = params.channel_id
        api = self.api
        lines = [b.text for b in params.content if isinstance(b, TextContent)]
        lines += [
            uri for b in params.content if (uri := getattr(b, "uri", None)) and isinstance(uri, str)
        ]
        text = "\n".join(lines)
        if api is None:
            raise _refusal(room_id, "not connected to the homeserver")
        if not text.strip():
            raise _refusal(room_id, "nothing to post: the content has no text")
        content = TextMessageEventContent(msgtype=MessageType.TEXT, body=text)
        transaction = api.api.get_txn_id()
        deadline = time.monotonic() + _PUBLISH_WITHIN
        backoff = _Backoff(2.0)
        while True:
            try:
                event_id = await api.send_message_event(
                    RoomID(room_id), EventType.ROOM_MESSAGE, content, txn_id=transaction
                )
                break
            except MLimitExceeded:
                if time.monotonic() + backoff.delay > deadline:
                    raise
            except MatrixRequestError as exc:
                if not _transient(exc):
                    # The homeserver refused it: nothing was posted.
                    raise _refusal(room_id, f"the homeserver refused it: {exc}") from exc
                if time.monotonic() + backoff.delay > deadline:
                    raise
            except Exception as exc:
                if not _transient(exc) or time.monotonic() + backoff.delay > deadline:
                    raise
            # Sending again with the same transaction id cannot post twice.
            await backoff.wait()
        _remember(self._sent, str(event_id), None)
        self._typing_at.pop(room_id, None)
        return str(event_id)

    async def on_typing(self, params: TypingParams) -> None:
        """Start or stop the bridge user's typing notification in the room."""
        stopping = params.op == "stop" or params.typing is False
        await self._type(params.channel_id, not stopping)

    async def on_chunk(self, params: OutgoingChunkParams) -> None:
        """A streamed chunk is never posted; it keeps the typing notification on."""
        last = self._typing_at.get(params.channel_id)
        if last is None or time.monotonic() - last > _TYPING_REFRESH:
            await self._type(params.channel_id, True)

    async def _type(self, room_id: str, on: bool) -> None:
        api = self.api
        if api is None:
            return
        try:
            await api.set_typing(RoomID(room_id), _TYPING_MS if on else 0)
        except (MatrixError, aiohttp.ClientError, TimeoutError) as exc:
            self._log.info("matrix_typing_failed", room=room_id, error=str(exc))
            return
        if on:
            self._typing_at[room_id] = time.monotonic()
        else:
            self._typing_at.pop(room_id, None)

    async def on_acknowledge(self, params: AcknowledgeParams) -> AcknowledgeResult:
        """Acknowledge a message with a read receipt."""
        api = self.api
        if api is None:
            return AcknowledgeResult(acknowledged=False, reason="not connected to the homeserver")
        try:
            await api.send_receipt(RoomID(params.channel_id), EventID(params.message_id))
        except (MatrixError, aiohttp.ClientError, TimeoutError) as exc:
            return AcknowledgeResult(acknowledged=False, reason=str(exc))
        return AcknowledgeResult(acknowledged=True, representation="read-receipt")

    async def on_open(self, params: OpenParams) -> ChannelDescriptor | OpenResult:
        """Open a known room, or join one by id or alias; its history on request."""
        if params.channel_id is not None:
            found = self.channels.get(params.channel_id)
        elif params.type is not None and params.address is not None:
            found = self.channels.find(params.type, params.address)
        else:
            found = None
        target = _join_target(params)
        if found is None and target is not None:
            found = self.channels.get(target)
        if found is None:
            if target is None:
                raise UnknownChannel(params.channel_id or json.dumps(params.address))
            if not self.config.join_on_open:
                raise ChannelOpenFailed(params.channel_id, "joining rooms on open is turned off")
            found = await self._join(target, params.channel_id)
        return await self._with_history(found, params)

    async def _join(self, target: str, channel_id: str | None) -> ChannelDescriptor:
        api = self.api
        if api is None:
            raise ChannelOpenFailed(channel_id, "not connected to the homeserver")
        try:
            joined = str(
                await api.join_room(
                    RoomID(target) if target.startswith("!") else RoomAlias(target), max_retries=0
                )
            )
            state = await api.api.request(
                Method.GET, Path.v3.rooms[RoomID(joined)].state, retry_count=0
            )
        except MatrixError as exc:
            raise ChannelOpenFailed(channel_id, f"could not join {target}: {exc}") from exc
        room = self.rooms.get(joined) or Room(joined)
        for event in state if isinstance(state, list) else ():
            if isinstance(event, Mapping):
                room.apply_state(event)
        if room.encrypted:
            self._refuse_encrypted(joined)
            with contextlib.suppress(MatrixError):
                await api.leave_room(RoomID(joined), reason=_E2EE_REASON)
            raise ChannelOpenFailed(channel_id, f"{joined} is end-to-end encrypted: {_E2EE_REASON}")
        self.rooms[joined] = room
        self._log.info("matrix_joined_on_open", room=joined, target=target)
        return self._descriptor(room)

    async def _with_history(
        self, channel: ChannelDescriptor, params: OpenParams
    ) -> ChannelDescriptor | OpenResult:
        if params.history is None or params.history.limit == 0 or self.api is None:
            return channel
        room = self.rooms.get(channel.id)
        if room is None:
            return channel
        limit = params.history.limit
        context = EventContext(
            own_user_id=self.own, room=room, partner=self.direct.partner(channel.id)
        )
        newest_first: list[IncomingMessage] = []
        query = {"dir": "b", "limit": str(min(limit + 1, 100))}
        # Pages back until one message more than asked (to know it was cut), at most
        # _HISTORY_PAGES pages: state events and the bridge's own messages fill pages too.
        for _ in range(_HISTORY_PAGES):
            try:
                page = await self.api.api.request(
                    Method.GET,
                    Path.v3.rooms[RoomID(channel.id)].messages,
                    query_params=query,
                    retry_count=0,
                )
            except MatrixError as exc:
                self._log.info("matrix_history_failed", room=channel.id, error=str(exc))
                break
            chunk = page.get("chunk") if isinstance(page, Mapping) else None
            for event in chunk if isinstance(chunk, list) else []:
                if isinstance(event, Mapping) and "state_key" not in event:
                    message = await to_incoming(event, context)
                    if message is not None:
                        newest_first.append(message)
            end = page.get("end") if isinstance(page, Mapping) else None
            if len(newest_first) > limit or not chunk or not isinstance(end, str):
                break
            query = {**query, "from": end}
        kept = list(reversed(newest_first[:limit]))
        return OpenResult(
            channel=channel, history=kept, history_truncated=len(newest_first) > limit
        )


class _Redeliver(Exception):
    """The host refused a batch of messages as a whole; the sync must be repeated."""


def _join_target(params: OpenParams) -> str | None:
    candidates: list[object] = [params.channel_id]
    if params.address is not None:
        candidates += [
            params.address.get("channelId"),
            params.address.get("roomId"),
            params.address.get("alias"),
        ]
    for candidate in candidates:
        if not isinstance(candidate, str):
            continue
        # A room id is "!" and an opaque string (room version 12 ids have no ":server");
        # an alias is "#name:server".
        if (candidate.startswith("!") and len(candidate) > 1) or (
            candidate.startswith("#") and ":" in candidate
        ):
            return candidate
    return None


def _refusal(channel_id: str, reason: str) -> ChannelNotPermitted:
    error = ChannelNotPermitted(channel_id)
    error.data = {"channelId": channel_id, "reason": reason}
    error.message = f"Channel not permitted: {reason}"
    return error


def _remember(table: OrderedDict[str, Any], key: str, value: Any) -> None:
    table[key] = value
    table.move_to_end(key)
    while len(table) > _REMEMBERED:
        table.popitem(last=False)
