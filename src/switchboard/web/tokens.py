"""Reading a bearer or operator token from a file: :func:`read_token_file`.

The file must be a regular file no other user can read, holding a usable token
(:func:`switchboard.config.token_problem`); every refusal is a ``ConfigError`` naming where the
file was configured.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from switchboard.config import ConfigError, token_problem

__all__ = ["read_token_file"]


def read_token_file(path_text: str, where: str) -> str:
    """The token in the file ``path_text``, named ``where`` in every refusal.

    Raises:
        ConfigError: the file is missing, not a regular file, readable by other users,
            unreadable, or does not hold a usable token.
    """
    path = Path(path_text)
    try:
        info = path.stat()
    except FileNotFoundError as exc:
        raise ConfigError(f"{where}: the file does not exist; write the token into it") from exc
    except OSError as exc:
        raise ConfigError(f"{where}: cannot read it: {exc}") from exc
    if not stat.S_ISREG(info.st_mode):
        raise ConfigError(f"{where}: it is not a regular file")
    if os.name == "posix" and info.st_mode & 0o077:
        raise ConfigError(
            f"{where}: its mode is {stat.S_IMODE(info.st_mode):o}, so other users may read or "
            f"replace the token; run `chmod 600 {path_text}`"
        )
    try:
        token = path.read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{where}: cannot read it: {exc}") from exc
    problem = token_problem(token)
    if problem:
        raise ConfigError(f"{where}: the file does not hold a usable bearer token: {problem}")
    return token
