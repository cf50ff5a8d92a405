"""switchboard.connectors.matrix: the Matrix bridge, ``switchboard-matrix``.

An MCPL 0.5 connector over stdio on :mod:`switchboard.connector` and mautrix: one Matrix
account's joined rooms become channels, what people write there becomes incoming messages,
and what the agent publishes is posted as that account. Configured by ``MATRIX_*``
environment variables (:mod:`.config`); installed with ``pip install 'switchboard[matrix]'``.
:mod:`.bridge` is the connector, :mod:`.rooms` the room → channel mapping, :mod:`.events` the
event → message mapping, :mod:`.state` the sync token on disk. See docs/bridges/matrix.md.
"""

from __future__ import annotations

from .bridge import EXIT_CONFIG, MatrixBridge
from .config import ENV_NAMES, ConfigProblems, InvitePolicy, MatrixConfig, load_config

__all__ = [
    "ENV_NAMES",
    "EXIT_CONFIG",
    "ConfigProblems",
    "InvitePolicy",
    "MatrixBridge",
    "MatrixConfig",
    "load_config",
]
