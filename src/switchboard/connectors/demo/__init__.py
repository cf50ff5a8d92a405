"""switchboard.connectors.demo: Demo Town, the bundled simulated community.

Run it as ``python -m switchboard.connectors.demo [--interval S] [--seed N] [--count N]
[--hello] [--junk] [--fail-after N]``; Switchboard spawns it over stdio for the embedded
default. :mod:`.script` holds the rooms, people and lines; :mod:`.town` is the connector.
"""

from __future__ import annotations

from .script import ROOMS, Chatter, Line, Person, Room, answer_to, descriptors
from .town import EXIT_AFTER_FAILURE, Delivery, DemoConnector, DemoOptions

__all__ = [
    "EXIT_AFTER_FAILURE",
    "ROOMS",
    "Chatter",
    "Delivery",
    "DemoConnector",
    "DemoOptions",
    "Line",
    "Person",
    "Room",
    "answer_to",
    "descriptors",
]
