"""switchboard.host: connector sessions, supervision, and the host object agents talk to.

The tools reach the host only through :class:`AgentPort` (:mod:`switchboard.host.port`), made
for one agent by :func:`agent_port`.
"""

from switchboard.host.agent.delivery import InboxRead
from switchboard.host.agent.desk import AgentDesk, Turn
from switchboard.host.agent.port import agent_port
from switchboard.host.app import Switchboard
from switchboard.host.connection.session import ConnectorSession, SessionState
from switchboard.host.outcome import PublishOutcome, PublishStatus
from switchboard.host.port import AgentPort
from switchboard.host.refusal import Refusal, RefusalKind

__all__ = [
    "AgentDesk",
    "AgentPort",
    "ConnectorSession",
    "InboxRead",
    "PublishOutcome",
    "PublishStatus",
    "Refusal",
    "RefusalKind",
    "SessionState",
    "Switchboard",
    "Turn",
    "agent_port",
]
