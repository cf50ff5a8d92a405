"""Reading a config file: :func:`load_config`.

It expands ``${NAME}`` and ``${NAME:-default}`` in every string value from the environment and
then the file's ``env_file`` (``$${`` is a literal ``${``), refuses an unset variable by name,
makes relative paths absolute against the config file's folder, and turns pydantic's errors
into one line per problem with the fix (the nearest key, the TOML form of a list of tables, the
list a string ``command`` should be). Values are checked without I/O; what needs the machine
(programs, folders) is :mod:`switchboard.config.check`.
"""

from __future__ import annotations

import difflib
import io
import json
import os
import re
import secrets
import shlex
import sys
import tomllib
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from dotenv.parser import parse_stream
from pydantic import (
    BaseModel,
    ValidationError,
)

from switchboard.config.agents import AgentConfig
from switchboard.config.common import ConfigError
from switchboard.config.connectors import ConnectorConfig
from switchboard.config.model import Config
from switchboard.config.store import StoreConfig

__all__ = ["demo_config", "demo_connector_command", "expand_env", "load_config", "read_env_file"]


_REFERENCE = re.compile(r"\$\$\{|\$\{([A-Za-z_][A-Za-z0-9_]*)(:-[^}]*)?\}|\$\{")

# The secrets only ``switchboard run`` uses: the agents' tokens and the connectors'
# environments. A command that only reads (``status``, ``agents``) may run without them.
_SECRET_PLACE = re.compile(r"(agent\.token|agents\.\d+\.token|connectors\.\d+\.env\.[^.]+)")


def _expand_text(
    text: str,
    where: str,
    env: Mapping[str, str],
    problems: list[str],
    unset_secrets: bool = False,
) -> str:
    def one(match: re.Match[str]) -> str:
        whole = match.group(0)
        if whole == "$${":
            return "${"
        name, default = match.group(1), match.group(2)
        if name is None:
            problems.append(
                f"{where}: `${{` does not start a reference like ${{NAME}} or "
                "${NAME:-default} (letters, digits, _); write $${ for a literal ${"
            )
            return whole
        if default is not None:
            return env.get(name) or default[2:]
        if name not in env and unset_secrets and _SECRET_PLACE.fullmatch(where):
            # Never used by the command that asked; unguessable, so it proves nothing.
            return secrets.token_urlsafe(32)
        if name not in env:
            problems.append(
                f"{where}: the environment variable {name} is not set (used as ${{{name}}}); "
                f"set it in the environment that runs switchboard (or in `env_file`), write "
                f"${{{name}:-default}} for a default, or $${{{name}}} for the literal text"
            )
            return whole
        return env[name]

    return _REFERENCE.sub(one, text)


def _expand_value(
    value: object, where: str, env: Mapping[str, str], problems: list[str], lax: bool = False
) -> object:
    if isinstance(value, str):
        return _expand_text(value, where, env, problems, lax)
    if isinstance(value, list):
        return [_expand_value(v, f"{where}.{i}", env, problems, lax) for i, v in enumerate(value)]
    if isinstance(value, dict):
        return {
            k: _expand_value(v, f"{where}.{k}" if where else str(k), env, problems, lax)
            for k, v in value.items()
        }
    return value


def expand_env(
    data: dict[str, object], env: Mapping[str, str], *, unset_secrets: bool = False
) -> dict[str, object]:
    """``data`` (a parsed TOML document) with ``${NAME}`` in every string value replaced.

    ``${NAME}`` is the value of the environment variable ``NAME``; ``${NAME:-default}`` is its
    value when it is set and not empty, else ``default`` (the text up to the first ``}``, taken
    literally); ``$${`` is a literal ``${``; any other ``$`` is kept as it is. Keys are never
    expanded, and a value is expanded once (a variable's value is not searched for references).

    Raises:
        ConfigError: naming every key that refers to an unset variable (without a default) or
            holds a ``${`` that is not a reference.
    """
    problems: list[str] = []
    expanded = _expand_value(data, "", env, problems, unset_secrets)
    if problems:
        raise ConfigError("; ".join(problems), problems)
    assert isinstance(expanded, dict)
    return expanded


def read_env_file(path: Path) -> dict[str, str]:
    """The ``KEY=VALUE`` lines of the dotenv file at ``path``.

    Blank lines and ``#`` comments are skipped, a value may be quoted ('...' or "..."), and an
    ``export`` in front of a key is allowed. Values are taken as written (no ``${...}`` in them
    is expanded); a key without ``=`` is skipped.

    Raises:
        ConfigError: the file cannot be read, or a line is not ``KEY=VALUE`` (naming the line).
    """
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError as exc:
        raise ConfigError(f"env_file {path} does not exist") from exc
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"env_file {path} cannot be read: {exc}") from exc
    values: dict[str, str] = {}
    bad: list[str] = []
    for binding in parse_stream(io.StringIO(text)):
        if binding.error:
            # The line itself is not shown: it may hold a secret.
            bad.append(
                f"env_file {path}, line {binding.original.line}: not a KEY=VALUE line (a key "
                "is letters, digits and _; quote a value that holds spaces or #)"
            )
        elif binding.key is not None and binding.value is not None:
            values[binding.key] = binding.value
    if bad:
        raise ConfigError("; ".join(bad), bad)
    return values


def _absolute(value: str, base: Path) -> str:
    path = Path(value).expanduser()
    return str(path if path.is_absolute() else base / path)


def _resolve_paths(data: dict[str, Any], base: Path) -> None:
    """Make the relative paths of ``data`` absolute against ``base`` (the config's folder)."""
    store = data.get("store")
    if isinstance(store, dict):
        where = store.get("path")
        if isinstance(where, str) and where not in ("", ":memory:") and ":" not in where[:6]:
            store["path"] = _absolute(where, base)
    tables: list[object] = [data.get("agent")]
    agents = data.get("agents")
    if isinstance(agents, list):
        tables += agents
    for table in tables:
        if isinstance(table, dict) and isinstance(table.get("token_file"), str):
            table["token_file"] = _absolute(table["token_file"], base)
    connectors = data.get("connectors")
    for connector in connectors if isinstance(connectors, list) else ():
        if not isinstance(connector, dict):
            continue
        cwd = connector.get("cwd")
        if isinstance(cwd, str) and cwd:
            connector["cwd"] = cwd = _absolute(cwd, base)
        command = connector.get("command")
        if isinstance(command, list) and command and isinstance(command[0], str):
            program = command[0]
            if "/" in program:
                home = Path(cwd) if isinstance(cwd, str) and cwd else base
                connector["command"] = [_absolute(program, home), *command[1:]]


# The tables of the file by the key that holds them, for telling a table from a list of them.
_LISTS_OF_TABLES = ("connectors", "agents")


def _model_at(loc: Sequence[int | str]) -> type[BaseModel] | None:
    """The model whose keys the table at ``loc`` (a pydantic error location) holds."""
    model: type[BaseModel] | None = Config
    for part in loc:
        if model is None:
            return None
        if isinstance(part, int):
            continue
        field = model.model_fields.get(part)
        if field is None:
            return None
        model = _model_in(field.annotation)
    return model


def _model_in(annotation: object) -> type[BaseModel] | None:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for arg in getattr(annotation, "__args__", ()):
        found = _model_in(arg)
        if found is not None:
            return found
    return None


def _table_name(loc: Sequence[int | str]) -> str:
    if not loc:
        return "the top level"
    if loc[0] in _LISTS_OF_TABLES and len(loc) >= 2 and isinstance(loc[1], int):
        inner = ".".join(str(x) for x in loc[2:])
        return f"[[{loc[0]}]]" + (f" (at {inner})" if inner else "")
    return "[" + ".".join(str(x) for x in loc) + "]"


def _unknown_key(loc: tuple[int | str, ...]) -> str:
    key, parent = str(loc[-1]), loc[:-1]
    model = _model_at(parent)
    if model is None:
        return f"`{key}` is not a key here"
    keys = list(model.model_fields)
    where = _table_name(parent)
    near = difflib.get_close_matches(key, keys, n=1, cutoff=0.6)
    if near:
        return f"`{key}` is not a key of {where}; did you mean `{near[0]}`?"
    if parent and key in Config.model_fields:
        return (
            f"`{key}` is a top-level key, but it sits in {where}: in TOML a key belongs to the "
            "table heading above it, so move it above the first [table] heading"
        )
    if not parent:
        for name, field in Config.model_fields.items():
            inner = _model_in(field.annotation)
            if inner is not None and key in inner.model_fields:
                form = f"[[{name}]]" if name in _LISTS_OF_TABLES else f"[{name}]"
                return f"`{key}` is not a top-level key: it belongs in {form}; move it under it"
    return f"`{key}` is not a key of {where}; its keys are {', '.join(keys)}"


def _secret_place(loc: Sequence[int | str]) -> bool:
    # a database URL may carry its password
    return any(str(part) in ("env", "token", "url") for part in loc)


def _toml_array(items: list[str]) -> str:
    return "[" + ", ".join(json.dumps(item) for item in items) + "]"


# What each TOML type is called, for a value of the wrong type.
_TOML_TYPES: dict[type, str] = {
    str: "a string",
    bool: "a boolean",
    int: "an integer",
    float: "a number with a fraction",
    list: "a list",
    dict: "a table",
}
_NUMBER = {"int_type": r"-?\d+", "float_type": r"-?\d+(\.\d+)?"}
_WANTED = {
    "int_type": "a whole number",
    "int_from_float": "a whole number",
    "float_type": "a number",
    "bool_type": "true or false",
    "string_type": "a string in quotes",
}


def _type_problem(kind: str, loc: tuple[int | str, ...], given: object) -> str | None:
    """A value of the wrong TOML type, said plainly with the line that fixes it. Nothing is
    converted for the user: ``port = "8766"`` and ``restart = "yes"`` are mistakes (a quoted
    number may be a typo of another key's value), and every one is listed at once."""
    wanted = _WANTED.get(kind)
    if wanted is None or not loc:
        return None
    key = str(loc[-1])
    got = _TOML_TYPES.get(type(given), "another kind of value")
    secret = _secret_place(loc)
    said = f"`{key}` must be {wanted}, not {got}"
    if not secret and isinstance(given, str | int | float) and not isinstance(given, bool):
        said += f" ({given!r})"
    fix: str | None = None
    if isinstance(given, str) and not secret:
        text = given.strip()
        if kind == "bool_type" and text.lower() in ("true", "yes", "on", "1"):
            fix = f"{key} = true"
        elif kind == "bool_type" and text.lower() in ("false", "no", "off", "0"):
            fix = f"{key} = false"
        elif kind in _NUMBER and re.fullmatch(_NUMBER[kind], text):
            fix = f"{key} = {text}"
    elif kind == "string_type" and not secret and isinstance(given, int | float | bool):
        fix = f"{key} = {json.dumps(str(given).lower() if isinstance(given, bool) else str(given))}"
    if fix is not None:
        said += f"; write {fix} (Switchboard does not convert it for you)"
    return said


def _problem(error: Mapping[str, Any]) -> str:
    """One line for one pydantic error: where, what, and the fix when one is known."""
    loc: tuple[int | str, ...] = tuple(error["loc"])
    kind: str = error["type"]
    given: object = error.get("input")
    where = ".".join(str(x) for x in loc) or "(top)"
    message: str = error["msg"]
    if kind == "extra_forbidden":
        return f"{where}: {_unknown_key(loc)}"
    if kind == "missing":
        return f"{where}: `{loc[-1]}` is required in {_table_name(loc[:-1])}"
    if kind == "list_type" and isinstance(given, dict) and loc and loc[-1] in _LISTS_OF_TABLES:
        name = loc[-1]
        return (
            f"{where}: `[{name}]` makes one table, but {name} is a list of tables: write "
            f"`[[{name}]]` (two brackets) above each one"
        )
    if kind in ("model_type", "dict_type") and isinstance(given, list) and loc:
        return (
            f"{where}: `[[{loc[-1]}]]` makes a list of tables, but {loc[-1]} is one table: "
            f"write `[{loc[-1]}]` (one bracket)"
            + ("; for several agents use [[agents]]" if loc[-1] == "agent" else "")
        )
    if kind == "list_type" and isinstance(given, str) and not _secret_place(loc):
        try:
            words = shlex.split(given) if loc[-1] == "command" else [given]
        except ValueError:
            words = given.split()
        return (
            f"{where}: `{loc[-1]}` is a list of strings, not one string: write "
            f"{loc[-1]} = {_toml_array(words or [given])}"
        )
    if message.startswith("Value error, "):
        return f"{where}: {message.removeprefix('Value error, ')}"
    typed = _type_problem(kind, loc, given)
    if typed is not None:
        return f"{where}: {typed}"
    shown = "" if _secret_place(loc) or isinstance(given, dict | list) else f" (got {given!r})"
    return f"{where}: {message}{shown}"


def _problems(exc: ValidationError) -> list[str]:
    lines: list[str] = []
    for error in exc.errors():
        line = _problem(error)
        if line not in lines:
            lines.append(line)
    return lines


def _invalid(p: Path, problems: list[str]) -> ConfigError:
    if len(problems) == 1:
        return ConfigError(f"config file {p} is invalid: {problems[0]}", problems)
    listed = "\n".join(f"  - {line}" for line in problems)
    return ConfigError(
        f"config file {p} is invalid ({len(problems)} problems):\n{listed}", problems
    )


def load_config(
    path: str | Path, *, env: Mapping[str, str] | None = None, unset_secrets: bool = False
) -> Config:
    """Read, expand and validate a TOML config file, raising :class:`ConfigError` with a clear
    reason for every problem (one line each, with the fix when one is known).

    ``${NAME}`` and ``${NAME:-default}`` take values from ``env`` (default: the process
    environment), then from the file's ``env_file`` (the environment wins). Relative paths
    (``store.path``, ``env_file``, ``token_file``, a connector's ``cwd``, and a ``command[0]``
    that holds a ``/``, the last against the connector's ``cwd`` when it has one) are made
    absolute against the config file's folder. Nothing else is checked on disk here; see
    :mod:`switchboard.config.check`.

    ``unset_secrets`` is for the commands that only read (``switchboard status``,
    ``switchboard agents``): the agents' tokens and the connectors' ``env`` may then refer to
    variables this shell does not set (see :func:`expand_env`); such a config must not run.
    """
    p = Path(path)
    base = Path(os.path.abspath(p)).parent
    try:
        data = tomllib.loads(p.read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise ConfigError(f"config file {p} does not exist") from exc
    except IsADirectoryError as exc:
        raise ConfigError(f"config file {p} is a folder, not a file") from exc
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"config file {p} cannot be read: {exc}") from exc
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"config file {p} is not valid TOML: {exc}") from exc
    real = os.environ if env is None else env
    try:
        named = data.get("env_file")
        if isinstance(named, str) and named:
            named = expand_env({"env_file": named}, real)["env_file"]
            assert isinstance(named, str)
            data["env_file"] = named = _absolute(named, base)
            real = {**read_env_file(Path(named)), **real}
        data = expand_env(data, real, unset_secrets=unset_secrets)
    except ConfigError as exc:
        raise ConfigError(
            f"config file {p}: {exc}", [f"config file {p}: {line}" for line in exc.problems]
        ) from exc
    _resolve_paths(data, base)
    try:
        return Config.model_validate(data)
    except ValidationError as exc:
        raise _invalid(p, _problems(exc)) from exc


def demo_connector_command(*extra: str) -> list[str]:
    """The argv that spawns the bundled demo connector with this interpreter."""
    return [sys.executable, "-m", "switchboard.connectors.demo", *extra]


def demo_config(store_path: str, *, interval: float = 1.5, count: int | None = None) -> Config:
    """The embedded default: one demo connector, a store at ``store_path``."""
    args = ["--hello", "--interval", str(interval)]
    if count is not None:
        args += ["--count", str(count)]
    return Config(
        connectors=[ConnectorConfig(id="demo", command=demo_connector_command(*args))],
        store=StoreConfig(path=store_path),
        agent=AgentConfig(transport="none"),
    )
