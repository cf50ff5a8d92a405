"""switchboard.events: what happened on the host, as typed values (:mod:`.kinds`), the bus that
carries them (:mod:`.bus`), their log lines (:mod:`.logline`) and storage outages told as events
(:mod:`.storage`)."""

from switchboard.events.bus import (
    EventBus,
    Listener,
)
from switchboard.events.kinds import (
    ChannelsChanged,
    ChannelsRegistered,
    ChannelsRemoved,
    ConnectorExited,
    ConnectorFailed,
    ConnectorMcpOnly,
    ConnectorReady,
    ConnectorRefused,
    ConnectorRestartScheduled,
    ConnectorStarted,
    ConnectorToolsChanged,
    HostEvent,
    InferenceAnswered,
    LifecycleStep,
    LifecycleStepKind,
    ManifestApplied,
    MessagesAccepted,
    Published,
    PushAccepted,
    StorageFailed,
    StorageRecovered,
)
from switchboard.events.logline import (
    OTHER_EVENTS,
    TRAFFIC_EVENTS,
    ConnectorLogs,
    log_event,
)
from switchboard.events.storage import (
    StorageWatch,
)

__all__ = [
    "OTHER_EVENTS",
    "TRAFFIC_EVENTS",
    "ChannelsChanged",
    "ChannelsRegistered",
    "ChannelsRemoved",
    "ConnectorExited",
    "ConnectorFailed",
    "ConnectorLogs",
    "ConnectorMcpOnly",
    "ConnectorReady",
    "ConnectorRefused",
    "ConnectorRestartScheduled",
    "ConnectorStarted",
    "ConnectorToolsChanged",
    "EventBus",
    "HostEvent",
    "InferenceAnswered",
    "LifecycleStep",
    "LifecycleStepKind",
    "Listener",
    "ManifestApplied",
    "MessagesAccepted",
    "Published",
    "PushAccepted",
    "StorageFailed",
    "StorageRecovered",
    "StorageWatch",
    "log_event",
]
