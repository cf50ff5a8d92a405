"""switchboard.web: what Switchboard's two HTTP listeners share (the agents' endpoint and the
status surface): token files (:mod:`.tokens`), ``Host`` checks (:mod:`.hosts`), and binding and
serving (:mod:`.serving`). It knows nothing of MCP, agents or the status model.
"""

from switchboard.web.hosts import bare_host, default_hosts, host_allowed
from switchboard.web.serving import QuietServer, bind_listener, serve_on
from switchboard.web.tokens import read_token_file

__all__ = [
    "QuietServer",
    "bare_host",
    "bind_listener",
    "default_hosts",
    "host_allowed",
    "read_token_file",
    "serve_on",
]
