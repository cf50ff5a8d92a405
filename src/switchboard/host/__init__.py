"""switchboard.host: connector sessions, supervision, and the host object agents talk to."""

from switchboard.host.agents import AgentDesk, Turn
from switchboard.host.app import ChannelView, InboxRead, Switchboard
from switchboard.host.outcome import PublishOutcome, PublishStatus, Refusal
from switchboard.host.session import ConnectorSession, SessionState

__all__ = [
    "AgentDesk",
    "ChannelView",
    "ConnectorSession",
    "InboxRead",
    "PublishOutcome",
    "PublishStatus",
    "Refusal",
    "SessionState",
    "Switchboard",
    "Turn",
]
