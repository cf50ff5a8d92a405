"""The demo connector: Demo Town on the connector SDK, a community with no network at all.

Once ready it registers its three rooms, greets, plays its script of townsfolk talking, and
answers what agents publish in character; every rule of the protocol is the SDK's.

What it deliberately does not know: JSON-RPC, grants or readiness rules.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

import anyio
import structlog

import switchboard
from switchboard.connector import Connector, NotGranted, incoming_text
from switchboard.protocol import (
    AcknowledgeParams,
    AcknowledgeResult,
    ChannelDescriptor,
    CloseParams,
    IncomingMessage,
    OpenParams,
    OpenResult,
    PublishParams,
    TypingParams,
    text_of,
)
from switchboard.transport import TransportError

from .script import ALICE, GENERAL, ROOMS_BY_ID, Chatter, Line, answer_to, descriptors

__all__ = ["EXIT_AFTER_FAILURE", "Delivery", "DemoConnector", "DemoOptions"]

log = structlog.get_logger(__name__)

EXIT_AFTER_FAILURE = 3
"""The exit code of a demo connector that stops because of ``fail_after``."""

_HISTORY = 50


@dataclass(frozen=True, slots=True)
class DemoOptions:
    """How the town behaves (the command-line options of ``python -m ...demo``).

    Attributes:
        interval: seconds between ambient lines; ``0`` means only scripted messages.
        seed: seeds the choice of lines.
        count: stop the ambient chatter after this many lines (``None``: never).
        junk: write non-JSON lines on stdout before and after the handshake.
        hello: greet once right after registering the rooms.
        fail_after: stop with exit code 3 after answering this many publishes.
    """

    interval: float = 2.0
    seed: int = 7
    count: int | None = None
    junk: bool = False
    hello: bool = False
    fail_after: int | None = None


@dataclass(frozen=True, slots=True)
class Delivery:
    """A message the agent published, as the town received it."""

    channel_id: str
    message_id: str
    text: str


class DemoConnector(Connector):
    """Demo Town as an MCPL connector (all seven channel capabilities, no push events).

    What it knows: how Demo Town behaves as an MCPL connector —

    - once ready it registers its three rooms (:mod:`.script`), optionally greets (``--hello``:
      Alice says "welcome!" in #general), and then, every ``interval`` seconds, one person says a
      scripted line in an open room (``channels/incoming``), ``count`` times at most;
    - a publish is "delivered" by logging it to stderr and keeping it in :attr:`deliveries`; it gets
      the message id ``demo-m-<n>``; when its text contains ``?`` someone answers in the same room
      right after the publish result is on the wire, quoting that message id;
    - typing and acknowledgements are logged (an acknowledgement is shown as a reaction);
    - ``channels/open`` can return the room's recent history;
    - ``fail_after``: after answering that many publishes the connector stops with exit code 3 (for
      crash and restart tests); ``junk``: it writes non-JSON lines on stdout around the handshake,
      as real connectors do.
    """

    def __init__(self, options: DemoOptions | None = None) -> None:
        super().__init__("switchboard-demo", switchboard.__version__, channels=True)
        self.options = options or DemoOptions()
        self.deliveries: list[Delivery] = []
        self._chatter = Chatter(self.options.seed)
        self._published = 0
        self._questions = 0
        self._said = 0
        self._history: dict[str, deque[IncomingMessage]] = {
            room_id: deque(maxlen=_HISTORY) for room_id in ROOMS_BY_ID
        }
        self._chatter_done: anyio.Event | None = None

    @property
    def chatter_finished(self) -> anyio.Event:
        """Set when the ambient chatter has said its ``count`` lines (or cannot go on)."""
        if self._chatter_done is None:
            self._chatter_done = anyio.Event()
        return self._chatter_done

    # -- start-up --------------------------------------------------------------------------

    async def on_ready(self) -> None:
        """Register the rooms, greet if asked, and start the ambient chatter."""
        if self.options.junk:
            await self._junk(b"demo: connected to Demo Town as demo-bot")
        try:
            results = await self.register(descriptors())
        except (NotGranted, TransportError) as exc:
            log.warning("demo_not_registering", reason=str(exc))
            return
        log.info("demo_registered", accepted=[r.id for r in results if r.accepted])
        if self.options.hello and GENERAL.id in self.channels:
            await self._say(Line(GENERAL, ALICE, "welcome!"))
        if self.options.interval > 0:
            self.start_soon(self._ambient)

    async def _junk(self, line: bytes) -> None:
        link = self.link
        if link is not None:
            await link.send(line)

    async def _ambient(self) -> None:
        limit = self.options.count
        spoken = 0
        try:
            while limit is None or spoken < limit:
                await anyio.sleep(self.options.interval)
                open_rooms = [room_id for room_id in ROOMS_BY_ID if self.channels.is_open(room_id)]
                line = self._chatter.next(open_rooms)
                if line is None:
                    continue
                if not await self._say(line):
                    return
                spoken += 1
        finally:
            log.info("demo_chatter_finished", lines=spoken)
            self.chatter_finished.set()

    async def _say(self, line: Line) -> bool:
        """Send one line as ``channels/incoming``; ``False`` when the host will not take it."""
        self._said += 1
        message = incoming_text(
            line.room.id,
            line.text,
            author_id=line.person.id,
            author_name=line.person.name,
            message_id=f"demo-in-{self._said}",
            tags=line.tags(),
            metadata=None if line.reply_to is None else {"replyTo": line.reply_to},
        )
        try:
            results = await self.send_incoming([message])
        except NotGranted as exc:
            log.warning("demo_not_speaking", reason=str(exc))
            return False
        except TransportError as exc:
            log.warning("demo_incoming_failed", error=str(exc))
            return False
        self._history[line.room.id].append(message)
        accepted = bool(results) and results[0].accepted
        log.info("demo_said", channel=line.room.id, who=line.person.name, accepted=accepted)
        return True

    # -- what the host asks ----------------------------------------------------------------

    async def on_publish(self, params: PublishParams) -> str:
        """Log the delivery, answer questions, and honour ``fail_after``."""
        self._published += 1
        message_id = f"demo-m-{self._published}"
        text = text_of(params.content)
        self.deliveries.append(Delivery(params.channel_id, message_id, text))
        log.info("demo_delivered", channel=params.channel_id, message_id=message_id, text=text)
        room = ROOMS_BY_ID.get(params.channel_id)
        if "?" in text and room is not None:
            self._questions += 1
            line = answer_to(room, self._questions, message_id)

            async def answer() -> None:
                await self._say(line)

            self.after_reply(answer)
        fail_after = self.options.fail_after
        if fail_after is not None and self._published >= fail_after:
            log.warning("demo_failing_on_purpose", publishes=self._published)
            self.stop_after_reply(EXIT_AFTER_FAILURE)
        return message_id

    async def on_open(self, params: OpenParams) -> ChannelDescriptor | OpenResult:
        """Open a room, with its recent history when the host asks for it."""
        found = await super().on_open(params)
        channel = found.channel if isinstance(found, OpenResult) else found
        if params.history is None:
            return channel
        recent = list(self._history.get(channel.id, ()))
        limit = params.history.limit
        kept = recent[-limit:] if limit else []
        return OpenResult(channel=channel, history=kept, history_truncated=len(recent) > limit)

    async def on_close(self, params: CloseParams) -> None:
        """Log it; the room then stays quiet until reopened."""
        log.info("demo_closed", channel=params.channel_id)

    async def on_typing(self, params: TypingParams) -> None:
        """Log the typing indicator."""
        stopping = params.op == "stop" or params.typing is False
        log.info("demo_typing", channel=params.channel_id, typing=not stopping)

    async def on_acknowledge(self, params: AcknowledgeParams) -> AcknowledgeResult:
        """Log the acknowledgement and show it as a reaction."""
        log.info(
            "demo_acknowledged",
            channel=params.channel_id,
            message_id=params.message_id,
            intent=params.intent,
        )
        return AcknowledgeResult(
            acknowledged=True, representation=f"reaction:{params.value or 'eyes'}"
        )
