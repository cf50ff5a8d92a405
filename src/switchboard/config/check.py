"""The checks of a loaded config that look at this machine: programs, folders, the store.

:func:`load_config` checks the file's shape and values without touching anything but the file
(and its ``env_file``). What it cannot know is whether a connector's program can be started
here, its ``cwd`` exists, or the store's folder can be made. :func:`spawn_problem` answers the
first two for one connector (the host asks it before each spawn, so a missing program is a
permanent error of that connector, not a retry); :func:`store_problem` the last;
:func:`machine_problems` all of them for ``switchboard check``, and :func:`summary` the lines
that command prints when the config is fine.

What it deliberately does not know: the HTTP endpoint's token files and port (that is
``switchboard.agents.http``), or whether a dialed connector answers.
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

from switchboard.config.connectors import ConnectorConfig
from switchboard.config.model import Config

__all__ = ["machine_problems", "program_argv", "spawn_problem", "store_problem", "summary"]


def _search_path(config: ConnectorConfig) -> str | None:
    return config.env.get("PATH", os.environ.get("PATH"))


def program_argv(config: ConnectorConfig) -> list[str]:
    """The argv to spawn for ``config``: its ``command``, except that a program name (no
    ``/``) found neither on the child's ``PATH`` nor anywhere else but beside this Python
    interpreter (a virtual environment's ``bin`` folder, where ``switchboard-demo-connector``
    is installed) is given by that path. Empty for a connector that is dialed."""
    if config.command is None:
        return []
    argv = list(config.command)
    program = argv[0]
    if "/" in program or shutil.which(program, path=_search_path(config)) is not None:
        return argv
    beside = Path(sys.executable).parent / program
    if beside.is_file() and os.access(beside, os.X_OK):
        argv[0] = str(beside)
    return argv


def _program_problem(program: str, search_path: str | None) -> str | None:
    if "/" in program:
        path = Path(program)
        if not path.exists():
            return f"the program {program} does not exist"
        if path.is_dir():
            return f"the program {program} is a folder, not a file"
        if not os.access(path, os.X_OK):
            return f"the program {program} is not executable (chmod +x {program})"
        return None
    if shutil.which(program, path=search_path) is None:
        shown = search_path if search_path is not None else "(PATH is not set)"
        return (
            f"the program {program!r} is not on PATH ({shown}); install it, or give its full "
            "path in `command`"
        )
    return None


def spawn_problem(config: ConnectorConfig) -> str | None:
    """Why ``config``'s command cannot be started on this machine, or ``None``.

    Checks that its ``cwd`` (when given) is an existing folder, and that ``command[0]`` is an
    executable file: a path (with a ``/``) that exists, or a name found on the ``PATH`` the
    child gets (its ``env`` may set one) or beside this interpreter (:func:`program_argv`).
    ``None`` for a connector that is dialed.
    """
    if config.command is None:
        return None
    if config.cwd is not None:
        cwd = Path(config.cwd)
        if not cwd.exists():
            return f"connector {config.id!r}: its cwd {config.cwd} does not exist"
        if not cwd.is_dir():
            return f"connector {config.id!r}: its cwd {config.cwd} is not a folder"
    search_path = _search_path(config)
    program = program_argv(config)[0]
    if "/" in program and not os.path.isabs(program) and config.cwd is not None:
        program = os.path.join(config.cwd, program)
    problem = _program_problem(program, search_path)
    return f"connector {config.id!r}: {problem}" if problem else None


def store_problem(config: Config) -> str | None:
    """Why the store file cannot be opened or made, or ``None``: it is a folder, or the
    nearest existing folder above it is not one this user may write in."""
    if config.store.backend == "postgres":  # the database is probed by the cluster extra
        return None
    where = config.store.path
    if where in ("", ":memory:") or where.startswith("file:"):
        return None
    path = Path(where)
    if path.is_dir():
        example = path / "switchboard.sqlite"
        return f"store.path {where} is a folder; name a file in it, e.g. {example}"
    if path.exists():
        if not os.access(path, os.R_OK | os.W_OK):
            return f"store.path {where} exists but this user cannot read and write it"
        return None
    parent = path.absolute().parent
    while not parent.exists():
        parent = parent.parent
    if not parent.is_dir():
        return f"store.path {where}: {parent} is a file, so the folder cannot be made"
    if not os.access(parent, os.W_OK | os.X_OK):
        return (
            f"store.path {where}: the folder {parent} is not writable by this user, so the "
            "store cannot be made there"
        )
    return None


def machine_problems(config: Config) -> list[str]:
    """Every problem of ``config`` on this machine: each connector's program and cwd, and the
    store; empty when there is none."""
    problems = [p for c in config.connectors if (p := spawn_problem(c)) is not None]
    store = store_problem(config)
    if store is not None:
        problems.append(store)
    return problems


def summary(config: Config, endpoint: str) -> list[str]:
    """What ``switchboard check`` says about a config that is fine: one line each for the
    connectors, the agents, the store, the agents' ``endpoint`` (its URL, or ``stdio``) and
    the log level."""
    reach = [
        f"{c.id} ({' '.join(c.command)})" if c.command is not None else f"{c.id} ({c.url})"
        for c in config.connectors
    ]
    if config.store.backend == "postgres" and config.store.url is not None:
        store = f"PostgreSQL {config.store.place} (answers)"
    else:
        path = config.store.path
        store = f"{path} ({'exists' if Path(path).exists() else 'will be created'})"
    lines = [
        f"connectors ({len(reach)}): {', '.join(reach) if reach else 'none'}",
        f"agents ({len(config.roster())}): {', '.join(e.handle for e in config.roster())}",
        f"store: {store}",
        f"agent endpoint: {endpoint}",
        f"log level: {config.log_level}",
    ]
    if config.cluster is not None:
        c = config.cluster
        lines.append(
            f"cluster: instance {c.instance_id}, NATS {c.nats_url}, lease ttl {c.lease_ttl:g}s"
        )
    return lines
