"""switchboard.config: Switchboard's TOML configuration, validated, one module per section.

:mod:`.load` reads a file (environment references, paths, readable errors) into :class:`Config`
(:mod:`.model`), whose sections are :mod:`.connectors`, :mod:`.store`, :mod:`.agents` and
:mod:`.status` over what they share (:mod:`.common`); :mod:`.check` checks what needs the
machine. See docs/configuration.md for every key.
"""

from switchboard.config.agents import (
    HANDLE_PATTERN,
    AgentConfig,
    AgentEntry,
    AgentRole,
    home_problem,
)
from switchboard.config.common import (
    LOG_LEVELS,
    MIN_TOKEN_LENGTH,
    ConfigError,
    is_loopback,
    is_wildcard,
    parse_duration,
    token_problem,
)
from switchboard.config.connectors import (
    DEFAULT_GRANT,
    DIAL_SCHEMES,
    ConnectorConfig,
    SubscriptionAllow,
    grant_entry_problem,
)
from switchboard.config.load import (
    demo_config,
    demo_connector_command,
    expand_env,
    load_config,
    read_env_file,
)
from switchboard.config.model import (
    Config,
)
from switchboard.config.status import (
    StatusConfig,
)
from switchboard.config.store import (
    ClusterConfig,
    StoreConfig,
    default_instance_id,
)

__all__ = [
    "DEFAULT_GRANT",
    "DIAL_SCHEMES",
    "HANDLE_PATTERN",
    "LOG_LEVELS",
    "MIN_TOKEN_LENGTH",
    "AgentConfig",
    "AgentEntry",
    "AgentRole",
    "ClusterConfig",
    "Config",
    "ConfigError",
    "ConnectorConfig",
    "StatusConfig",
    "StoreConfig",
    "SubscriptionAllow",
    "default_instance_id",
    "demo_config",
    "demo_connector_command",
    "expand_env",
    "grant_entry_problem",
    "home_problem",
    "is_loopback",
    "is_wildcard",
    "load_config",
    "parse_duration",
    "read_env_file",
    "token_problem",
]
