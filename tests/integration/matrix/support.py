"""What the Matrix bridge's tests share: a person with a real Matrix client, and a running
Switchboard with the bridge as its connector and a real MCP client as the agent.

- :class:`Person` is a second real Matrix client (mautrix's ``ClientAPI`` over its own aiohttp
  session): it creates rooms, talks, replies, edits, renames, kicks, and reads what happens in
  its rooms by syncing, as any Matrix app does.
- :func:`switchboard_run` writes a config with one ``[[connectors]]`` entry,
  ``command = [".../switchboard-matrix"]`` plus the ``MATRIX_*`` env, starts
  ``switchboard run --config ...`` (agent over stdio) and attaches the MCP Python SDK client;
  the host's stderr (and so the bridge's log, as ``connector_stderr``) goes to a file.
- :func:`inbox_until` reads the agent's inbox (waiting inside the tool) until a predicate
  holds; :func:`channel_until` polls ``channel_list``; both under :func:`anyio.fail_after`.
"""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import aiohttp
import anyio
from mautrix.api import HTTPAPI, Method
from mautrix.api import Path as ApiPath
from mautrix.client import ClientAPI
from mautrix.types import (
    EventID,
    RoomCreatePreset,
    RoomID,
    UserID,
)
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client

from .synapse import MatrixUser, Synapse

__all__ = [
    "BRIDGE",
    "Board",
    "Person",
    "bridge_env",
    "call",
    "channel_until",
    "inbox_until",
    "signed_in",
    "switchboard_run",
    "switchboard_run_config",
]

BRIDGE: Final = str(Path(sys.executable).with_name("switchboard-matrix"))
"""The installed console script (the config names it as an operator would)."""

Event = Mapping[str, Any]


@dataclass
class Person:
    """Someone using Matrix through their own client."""

    user: MatrixUser
    api: ClientAPI
    since: str | None = None
    seen: list[Event] = field(default_factory=list)
    typing: dict[str, list[list[str]]] = field(default_factory=dict)

    @property
    def user_id(self) -> str:
        return self.user.user_id

    # -- acting --------------------------------------------------------------------------------

    async def create_room(
        self,
        name: str | None,
        *,
        invite: Sequence[str] = (),
        direct: bool = False,
        encrypted: bool = False,
    ) -> str:
        state: list[dict[str, Any]] = []
        if encrypted:
            state.append(
                {
                    "type": "m.room.encryption",
                    "state_key": "",
                    "content": {"algorithm": "m.megolm.v1.aes-sha2"},
                }
            )
        body: dict[str, Any] = {
            "preset": (
                RoomCreatePreset.TRUSTED_PRIVATE if direct else RoomCreatePreset.PRIVATE
            ).value,
            "invite": list(invite),
            "is_direct": direct,
            "initial_state": state,
        }
        if name is not None:
            body["name"] = name
        answer = await self.api.api.request(Method.POST, ApiPath.v3.createRoom, body)
        return str(answer["room_id"])

    async def send(self, room_id: str, text: str, **extra: Any) -> str:
        content = {"msgtype": "m.text", "body": text, **extra}
        path = ApiPath.v3.rooms[RoomID(room_id)].send["m.room.message"][self.api.api.get_txn_id()]
        answer = await self.api.api.request(Method.PUT, path, content)
        return str(answer["event_id"])

    async def send_html(self, room_id: str, body: str, html: str, **extra: Any) -> str:
        return await self.send(
            room_id, body, format="org.matrix.custom.html", formatted_body=html, **extra
        )

    async def reply(self, room_id: str, to: str, text: str, **extra: Any) -> str:
        return await self.send(
            room_id, text, **{"m.relates_to": {"m.in_reply_to": {"event_id": to}}}, **extra
        )

    async def edit(self, room_id: str, original: str, text: str) -> str:
        return await self.send(
            room_id,
            f"* {text}",
            **{
                "m.new_content": {"msgtype": "m.text", "body": text},
                "m.relates_to": {"rel_type": "m.replace", "event_id": original},
            },
        )

    async def redact(self, room_id: str, event_id: str) -> str:
        return str(await self.api.redact(RoomID(room_id), EventID(event_id)))

    async def rename(self, room_id: str, name: str) -> None:
        path = ApiPath.v3.rooms[RoomID(room_id)].state["m.room.name"][""]
        await self.api.api.request(Method.PUT, path, {"name": name})

    async def kick(self, room_id: str, user_id: str) -> None:
        await self.api.kick_user(RoomID(room_id), UserID(user_id), reason="test")

    async def invite(self, room_id: str, user_id: str) -> None:
        await self.api.invite_user(RoomID(room_id), UserID(user_id))

    async def join(self, room_id: str) -> None:
        await self.api.join_room_by_id(RoomID(room_id))

    # -- seeing --------------------------------------------------------------------------------

    async def sync(self, timeout_ms: int = 1000) -> None:
        query = {"timeout": str(timeout_ms)}
        if self.since is not None:
            query["since"] = self.since
        data = await self.api.api.request(Method.GET, ApiPath.v3.sync, query_params=query)
        self.since = data["next_batch"]
        for room_id, section in data.get("rooms", {}).get("join", {}).items():
            for event in section.get("timeline", {}).get("events", []):
                self.seen.append({**event, "room_id": room_id})
            for event in section.get("ephemeral", {}).get("events", []):
                if event.get("type") == "m.typing":
                    users = event.get("content", {}).get("user_ids", [])
                    self.typing.setdefault(room_id, []).append(list(users))

    async def wait_for(self, predicate: Callable[[Event], bool], *, within: float = 30.0) -> Event:
        """The first event seen (from now or earlier) that satisfies ``predicate``."""
        with anyio.fail_after(within):
            while True:
                for event in self.seen:
                    if predicate(event):
                        return event
                await self.sync()

    async def wait_typing(self, room_id: str, user_id: str, *, within: float = 30.0) -> None:
        """Until the person's client shows ``user_id`` typing in the room."""
        with anyio.fail_after(within):
            while not any(user_id in users for users in self.typing.get(room_id, [])):
                await self.sync()

    def messages_from(self, user_id: str, room_id: str) -> list[str]:
        return [
            str(e.get("content", {}).get("body"))
            for e in self.seen
            if e.get("sender") == user_id
            and e.get("room_id") == room_id
            and e.get("type") == "m.room.message"
        ]


@asynccontextmanager
async def signed_in(synapse: Synapse, user: MatrixUser) -> AsyncIterator[Person]:
    """``user`` at their own Matrix client; what they see starts now."""
    async with aiohttp.ClientSession() as session:
        http = HTTPAPI(synapse.url, user.access_token, client_session=session)
        person = Person(user, ClientAPI(UserID(user.user_id), api=http))
        await person.sync(0)
        person.seen.clear()
        person.typing.clear()
        yield person


def bridge_env(synapse: Synapse, bot: MatrixUser, state_dir: Path, **extra: str) -> dict[str, str]:
    """The ``MATRIX_*`` environment of a bridge for ``bot``."""
    return {
        "MATRIX_HOMESERVER": synapse.url,
        "MATRIX_USER_ID": bot.user_id,
        "MATRIX_ACCESS_TOKEN": bot.access_token,
        "MATRIX_STATE_DIR": str(state_dir),
        "MATRIX_RETRY_MAX_SECONDS": "1",
        "MATRIX_LOG_LEVEL": "INFO",
        **extra,
    }


def _toml_table(values: Mapping[str, str]) -> str:
    return "{" + ", ".join(f"{key} = {json.dumps(value)}" for key, value in values.items()) + "}"


@dataclass
class Board:
    """A running ``switchboard run`` with the agent attached."""

    client: Client
    log: Path

    def log_text(self) -> str:
        return self.log.read_text(errors="replace")

    async def wait_log(self, text: str, *, times: int = 1, within: float = 30.0) -> str:
        """Until the host's stderr (the bridge's log included) holds ``text`` ``times`` times;
        returns the log. A file has no event to wait on, so it is read every tenth of a
        second (the host also joins a connector's stderr lines for a moment before logging)."""
        with anyio.fail_after(within):
            while True:
                log = self.log_text()
                if log.count(text) >= times:
                    return log
                await anyio.sleep(0.1)


@asynccontextmanager
async def switchboard_run(
    tmp_path: Path, env: Mapping[str, str], *, store: Path | None = None, name: str = "run"
) -> AsyncIterator[Board]:
    """``switchboard run`` with the bridge as connector ``matrix``; the agent over stdio."""
    async with switchboard_run_config(tmp_path, env, store=store, name=name) as board:
        yield board


@asynccontextmanager
async def switchboard_run_config(
    tmp_path: Path,
    env: Mapping[str, str] | None = None,
    *,
    command: Sequence[str] = (BRIDGE,),
    store: Path | None = None,
    name: str = "run",
    log_level: str = "INFO",
) -> AsyncIterator[Board]:
    """``switchboard run`` with one connector, ``matrix``, spawned as ``command`` with
    ``env``; the agent over stdio, the host's stderr in ``<name>-stderr.log``."""
    await anyio.Path(tmp_path).mkdir(parents=True, exist_ok=True)
    config = tmp_path / f"{name}.toml"
    argv = ", ".join(json.dumps(word) for word in command)
    env_line = f"env = {_toml_table(env)}" if env else ""
    config.write_text(
        f"""
log_level = {json.dumps(log_level)}
[store]
path = {json.dumps(str(store or tmp_path / "switchboard.sqlite"))}
[agent]
transport = "stdio"
[[connectors]]
id = "matrix"
command = [{argv}]
{env_line}
backoff_initial = 0.2
backoff_max = 1.0
"""
    )
    log = tmp_path / f"{name}-stderr.log"
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "switchboard", "run", "--config", str(config)]
    )
    with log.open("a") as errlog:
        async with Client(stdio_client(params, errlog=errlog), mode="legacy") as client:
            yield Board(client, log)


async def call(client: Client, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """A tool's structured result; a refusal fails the test with its text."""
    result = await client.call_tool(tool, arguments)
    assert not result.is_error, result.content
    return dict(result.structured_content or {})


async def inbox_until(
    client: Client, predicate: Callable[[list[dict[str, Any]]], bool], *, within: float = 30.0
) -> list[dict[str, Any]]:
    """Read the inbox (waiting inside the tool) until ``predicate(messages so far)`` holds."""
    seen: list[dict[str, Any]] = []
    with anyio.fail_after(within):
        while not predicate(seen):
            data = await call(client, "inbox", {"wait_seconds": 2})
            seen.extend(data["messages"])
    return seen


async def channel_until(
    client: Client,
    predicate: Callable[[dict[str, dict[str, Any]]], bool],
    *,
    within: float = 30.0,
) -> dict[str, dict[str, Any]]:
    """Poll ``channel_list`` until ``predicate(channels by id)`` holds; returns them."""
    with anyio.fail_after(within):
        while True:
            data = await call(client, "channel_list", {})
            channels = {c["channel_id"]: c for c in data["channels"]}
            if predicate(channels):
                return channels
            await anyio.sleep(0.2)
