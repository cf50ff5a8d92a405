"""The kit's stand-in connector: a relay from its stdin/stdout to the kit's TCP listener.

A host under test spawns this module as if it were a connector (``{connector}`` in the host
command). It connects to ``--connect HOST:PORT`` and copies bytes both ways until either side
ends, so the kit process itself answers the host with full control and records every frame.

What this module knows: byte copying between a pipe pair and a socket. What it deliberately
does not know: JSON-RPC, MCPL, or what the check does (``--check`` only labels logs).
It imports nothing from switchboard, so it starts fast.
"""

from __future__ import annotations

import argparse
import os
import socket
import sys
import threading
from collections.abc import Sequence

__all__ = ["connector_argv", "main"]

_CHUNK = 65536


def connector_argv(port: int, check_id: str, *, host: str = "127.0.0.1") -> list[str]:
    """The argv that runs this relay against the kit's listener at ``host:port``."""
    return [
        sys.executable,
        "-m",
        "switchboard.conformance.host.agent_connector",
        "--connect",
        f"{host}:{port}",
        "--check",
        check_id,
    ]


def _stdin_to_socket(sock: socket.socket, done: threading.Event) -> None:
    try:
        while data := os.read(0, _CHUNK):
            sock.sendall(data)
    except OSError:
        pass
    finally:
        done.set()


def _socket_to_stdout(sock: socket.socket, done: threading.Event) -> None:
    try:
        while data := sock.recv(_CHUNK):
            view = memoryview(data)
            while view:
                written = os.write(1, view)
                view = view[written:]
    except OSError:
        pass
    finally:
        done.set()


def _relay(host: str, port: int) -> None:
    """Copy bytes both ways until either side ends (threads: no event loop to import)."""
    sock = socket.create_connection((host, port))
    done = threading.Event()
    for copy in (_stdin_to_socket, _socket_to_stdout):
        threading.Thread(target=copy, args=(sock, done), daemon=True).start()
    done.wait()
    sock.close()


def main(argv: Sequence[str] | None = None) -> int:
    """Relay until either side closes; 1 when the kit cannot be reached."""
    parser = argparse.ArgumentParser(prog="agent_connector")
    parser.add_argument("--connect", required=True, help="HOST:PORT of the kit's listener")
    parser.add_argument("--check", default="", help="the check this run serves (for logs)")
    args = parser.parse_args(None if argv is None else list(argv))
    host, _, port = str(args.connect).rpartition(":")
    try:
        _relay(host or "127.0.0.1", int(port))
    except (OSError, ValueError) as exc:
        sys.stderr.write(f"agent_connector ({args.check}): {exc}\n")
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
