"""The checks of a loaded config that look at this machine: programs, folders, the store.

:func:`load_config` checks the file's shape and values without touching anything but the file
(and its ``env_file``). What it cannot know is whether a connector's program can be started
here, its ``cwd`` exists, or the store's folder can be made. :func:`spawn_problem` answers the
first two for one connector (the host asks it before each spawn, so a missing program is a
permanent error of that connector, not a retry); :func:`start_problem` asks a Python or Node
connector's interpreter whether its module or script is there (``switchboard check`` only: it
runs the interpreter once); :func:`store_problem` the last; :func:`machine_problems` all of
them for ``switchboard check``, and :func:`summary` the lines it prints when the config is fine.

What it deliberately does not know: the HTTP endpoint's token files and port (that is
``switchboard.agents.http``), or whether a dialed connector answers.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

from switchboard.config.connectors import ConnectorConfig
from switchboard.config.model import Config

__all__ = [
    "machine_problems",
    "program_argv",
    "spawn_problem",
    "start_problem",
    "store_problem",
    "summary",
]

_PYTHON = re.compile(r"python[0-9.]*$")
_NODE = re.compile(r"(node|nodejs|bun|deno)$")
# Options of the Python interpreter that take the next word as their value.
_PYTHON_VALUED = frozenset({"-X", "-W", "--check-hash-based-pycs"})
# Asks the connector's interpreter whether it can find the module, without running it.
_FIND_MODULE = (
    "import importlib.util, sys\n"
    "try:\n"
    "    found = importlib.util.find_spec(sys.argv[1]) is not None\n"
    "except Exception as exc:\n"
    "    print(f'{type(exc).__name__}: {exc}'); sys.exit(3)\n"
    "if not found:\n"
    "    print(f'No module named {sys.argv[1]!r}'); sys.exit(3)\n"
)
PROBE_TIMEOUT = 20.0
"""Seconds ``switchboard check`` waits for a connector's interpreter to say whether its
module is there."""


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


def _python_target(args: list[str]) -> tuple[str, str] | None:
    """``("module", name)`` or ``("script", path)`` that a Python command line runs."""
    words = iter(args)
    for word in words:
        if word == "-m":
            name = next(words, None)
            return ("module", name) if name else None
        if word.startswith("-m") and not word.startswith("--"):
            return "module", word[2:]
        if word in _PYTHON_VALUED:
            next(words, None)
        elif word == "-c" or word == "-":
            return None
        elif not word.startswith("-"):
            return "script", word
    return None


def start_problem(config: ConnectorConfig) -> str | None:
    """Why ``config``'s command would exit at once, as far as can be told without running the
    connector, or ``None``: a Python command's ``-m`` module that its interpreter cannot find
    (the interpreter is asked, with the connector's ``env`` and ``cwd``), or a Python or Node
    script that does not exist. Other programs are not looked into. Runs a process: for
    ``switchboard check``, not before each spawn."""
    if config.command is None or spawn_problem(config) is not None:
        return None
    argv = program_argv(config)
    program, name = argv[0], Path(argv[0]).name
    target: tuple[str, str] | None = None
    if _PYTHON.match(name):
        target = _python_target(argv[1:])
    elif _NODE.match(name):
        scripts = [word for word in argv[1:] if not word.startswith("-")]
        target = ("script", scripts[0]) if scripts else None
    if target is None:
        return None
    kind, what = target
    if kind == "script":
        path = Path(config.cwd or ".") / what
        if path.exists():
            return None
        return f"connector {config.id!r}: {name} would run {what}, which does not exist ({path})"
    try:
        done = subprocess.run(
            [program, "-c", _FIND_MODULE, what],
            env={**os.environ, **config.env},
            cwd=config.cwd,
            capture_output=True,
            text=True,
            timeout=PROBE_TIMEOUT,
            check=False,
            stdin=subprocess.DEVNULL,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"connector {config.id!r}: could not ask {program} about {what}: {exc}"
    if done.returncode == 0:
        return None
    said = done.stdout.strip() or done.stderr.strip() or f"exit status {done.returncode}"
    said = said.splitlines()[-1]
    hint = "give the full path of the Python it is installed in (a virtual environment's python)"
    if what.split(".")[0] == "switchboard":
        hint = f"use the installed command instead, or this Switchboard's Python: {sys.executable}"
        if what.startswith("switchboard.connectors.demo"):
            hint = 'use command = ["switchboard-demo-connector", ...] instead'
    found = shutil.which(program, path=_search_path(config))
    shown = program if "/" in program or found is None else f"{program} ({found})"
    return f"connector {config.id!r}: {shown} cannot import {what}: {said}; {hint}"


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
    problems = [
        p for c in config.connectors if (p := spawn_problem(c) or start_problem(c)) is not None
    ]
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
    retention = _retention_line(config)
    if retention is not None:
        lines.append(retention)
    if config.cluster is not None:
        c = config.cluster
        lines.append(
            f"cluster: instance {c.instance_id}, NATS {c.nats_url}, lease ttl {c.lease_ttl:g}s, "
            f"hold {c.hold:g}s, settle {c.settle:g}s"
        )
    return lines


def _retention_line(config: Config) -> str | None:
    """``retention: ...`` when ``retain`` or ``max_size`` is set (docs/operations.md)."""
    store = config.store
    if store.retain is None and store.max_size is None:
        return None
    parts = []
    if store.retain is not None:
        parts.append(f"older than {_duration(store.retain)}")
    if store.max_size is not None:
        measured = "of batch rows" if store.backend == "postgres" else "of pages in use"
        parts.append(f"oldest beyond {int(store.max_size):,} bytes {measured}")
    where = " (by the instance holding @job:retention)" if config.cluster is not None else ""
    return (
        f"retention: deletes acknowledged messages {' and '.join(parts)}, "
        f"every {_duration(store.retention_interval)}{where}"
    )


def _duration(seconds: float) -> str:
    """``seconds`` in the largest whole unit of the config's durations (``30d``, ``90s``)."""
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size and seconds % size == 0:
            return f"{seconds / size:g}{unit}"
    return f"{seconds:g}s"
