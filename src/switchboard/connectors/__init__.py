"""switchboard.connectors: connectors bundled with Switchboard, each built on the SDK.

- :mod:`.demo` — Demo Town, a simulated community for the embedded default.
"""
