"""switchboard.app: the composition root: the board that builds every part, and the ways to run it.

:class:`Switchboard` (:mod:`.board`) builds the parts in dependency order; :mod:`.serve`
serves the agents over stdio or HTTP with the status surface beside them; :mod:`.demo` runs
the bundled demo community in the terminal.
"""

from switchboard.app.board import Switchboard, build_server

__all__ = ["Switchboard", "build_server"]
