"""The bridge's state directory: the sync token survives a restart, belongs to one user, is
written atomically and privately, and only one process per directory writes it."""

from __future__ import annotations

import stat
from pathlib import Path

from switchboard.connectors.matrix.state import Session, StateDir


def _state(path: Path, user: str = "@bot:example.org") -> StateDir:
    return StateDir(path, user, "https://matrix.example.org")


def test_the_sync_token_is_kept_for_the_next_start_of_the_same_user(tmp_path: Path) -> None:
    first = _state(tmp_path / "state")
    assert first.open()
    first.save_sync_token("s72_1")
    first.close()
    second = _state(tmp_path / "state")
    assert second.sync_token() == "s72_1"
    assert _state(tmp_path / "state", "@other:example.org").sync_token() is None


def test_the_directory_and_its_files_are_private(tmp_path: Path) -> None:
    state = _state(tmp_path / "state")
    state.open()
    state.save_sync_token("s1")
    state.save_session(Session("syt_secret", "DEVICE"))
    assert stat.S_IMODE((tmp_path / "state").stat().st_mode) == 0o700
    for name in ("sync.json", "session.json"):
        assert stat.S_IMODE((tmp_path / "state" / name).stat().st_mode) == 0o600
    assert [p.name for p in (tmp_path / "state").iterdir() if p.name.startswith(".")] == []


def test_a_second_process_on_the_same_directory_never_writes_the_token(tmp_path: Path) -> None:
    owner = _state(tmp_path / "state")
    other = _state(tmp_path / "state")
    assert owner.open()
    assert not other.open()
    owner.save_sync_token("s10")
    other.save_sync_token("s3")
    assert other.sync_token() == "s10"
    owner.close()
    assert other.open()


def test_a_password_login_is_kept_for_this_user_and_homeserver_only(tmp_path: Path) -> None:
    state = _state(tmp_path / "state")
    state.open()
    state.save_session(Session("syt_secret", "DEVICE"))
    assert state.session() == Session("syt_secret", "DEVICE")
    moved = StateDir(tmp_path / "state", "@bot:example.org", "https://elsewhere.example.org")
    assert moved.session() is None
    state.forget_session()
    assert state.session() is None
