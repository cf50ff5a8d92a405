"""switchboard.host: connector sessions, supervision, and the host object agents talk to."""

from switchboard.host.agent.desk import AgentDesk, Turn
from switchboard.host.app import ChannelView, InboxRead, Switchboard
from switchboard.host.connection.session import ConnectorSession, SessionState
from switchboard.host.outcome import PublishOutcome, PublishStatus
from switchboard.host.refusal import Refusal, RefusalKind

__all__ = [
    "AgentDesk",
    "ChannelView",
    "ConnectorSession",
    "InboxRead",
    "PublishOutcome",
    "PublishStatus",
    "Refusal",
    "RefusalKind",
    "SessionState",
    "Switchboard",
    "Turn",
]
