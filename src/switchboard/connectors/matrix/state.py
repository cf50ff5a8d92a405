"""What the Matrix bridge keeps on disk: the sync token, and a token from a password login.

:class:`StateDir` writes each file atomically, mode 600 in a 700 directory; the sync token is
written only after the host answered for every message of a batch, and only by the one
process holding the directory's lock.

What it deliberately does not know: Matrix or the network.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

__all__ = ["Session", "StateDir"]


@dataclass(frozen=True, slots=True)
class Session:
    """A login kept from an earlier start."""

    access_token: str
    device_id: str | None


class StateDir:
    """The bridge's state directory (created mode 700 on :meth:`open`).

    What it knows: the state directory's files and their rules.

    - ``sync.json`` holds ``{"userId", "nextBatch"}``: where the next ``/sync`` continues. The
      bridge writes it only after the host has answered for every message of the batch, so a restart
      neither skips nor repeats what the host took (the host's dedupe is the second line, for the
      window between the host's answer and this write). A token of another user is ignored.
    - ``session.json`` holds ``{"userId", "homeserver", "accessToken", "deviceId"}`` after a
      password login, so the next start does not log in (and make a device) again.
    - Every write replaces the file atomically (a temporary file, ``fsync``, ``rename``, then the
      directory is synced), files are mode 600 and the directory 700: the token is a secret.
    - ``lock``: one bridge process per directory writes the sync token. A second process on the same
      directory (a misconfiguration, or the conformance kit's parallel sessions) still serves, but
      never writes the token, so the two cannot move it back and forth.
    """

    def __init__(self, path: Path, user_id: str, homeserver: str) -> None:
        self.path = path
        self.user_id = user_id
        self.homeserver = homeserver
        self._lock: IO[str] | None = None

    # -- lifetime ------------------------------------------------------------------------------

    def open(self) -> bool:
        """Create the directory and try to become its writer.

        Returns:
            Whether this process holds the lock (and so may write the sync token).
        """
        self.path.mkdir(parents=True, exist_ok=True, mode=0o700)
        with contextlib.suppress(OSError):
            self.path.chmod(0o700)
        handle = (self.path / "lock").open("a")
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            handle.close()
            return False
        self._lock = handle
        return True

    def close(self) -> None:
        """Give up the lock."""
        if self._lock is not None:
            with contextlib.suppress(OSError):
                fcntl.flock(self._lock, fcntl.LOCK_UN)
            self._lock.close()
            self._lock = None

    @property
    def writer(self) -> bool:
        """Whether this process may write the sync token."""
        return self._lock is not None

    # -- the sync token ------------------------------------------------------------------------

    def sync_token(self) -> str | None:
        """The saved ``next_batch`` for this user, or ``None``."""
        data = self._read("sync.json")
        if data is None or data.get("userId") != self.user_id:
            return None
        token = data.get("nextBatch")
        return token if isinstance(token, str) and token else None

    def save_sync_token(self, token: str) -> None:
        """Keep ``token`` durably (only the writer does; anyone else's call does nothing)."""
        if self.writer:
            self._write("sync.json", {"userId": self.user_id, "nextBatch": token})

    # -- a password login ----------------------------------------------------------------------

    def session(self) -> Session | None:
        """The access token of an earlier password login of this user on this homeserver."""
        data = self._read("session.json")
        if (
            data is None
            or data.get("userId") != self.user_id
            or data.get("homeserver") != self.homeserver
        ):
            return None
        token = data.get("accessToken")
        device = data.get("deviceId")
        if not isinstance(token, str) or not token:
            return None
        return Session(token, device if isinstance(device, str) else None)

    def save_session(self, session: Session) -> None:
        """Keep a login (mode 600)."""
        self._write(
            "session.json",
            {
                "userId": self.user_id,
                "homeserver": self.homeserver,
                "accessToken": session.access_token,
                "deviceId": session.device_id,
            },
        )

    def forget_session(self) -> None:
        """Drop a login the homeserver no longer accepts."""
        with contextlib.suppress(FileNotFoundError):
            (self.path / "session.json").unlink()

    # -- files ---------------------------------------------------------------------------------

    def _read(self, name: str) -> dict[str, Any] | None:
        try:
            data = json.loads((self.path / name).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        return data if isinstance(data, dict) else None

    def _write(self, name: str, data: dict[str, Any]) -> None:
        self.path.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd, temporary = tempfile.mkstemp(prefix=f".{name}.", dir=self.path)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                json.dump(data, handle)
                handle.flush()
                os.fsync(handle.fileno())
            os.chmod(temporary, 0o600)
            os.replace(temporary, self.path / name)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(temporary)
            raise
        directory = os.open(self.path, os.O_RDONLY)
        try:
            os.fsync(directory)
        finally:
            os.close(directory)
