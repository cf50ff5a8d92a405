"""The configuration mistakes of issue #13, each made as an operator makes it: a TOML file
given to the real ``switchboard`` command in a subprocess. Each one stops start-up with exit
code 2 and a message that names the key and the fix, and none prints a traceback.

What this module knows: the words of each message that tell the operator the fix. What it
deliberately doesn't: how the checks are implemented (config/model.py, config/check.py).
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import anyio
import pytest
from anyio.abc import ByteReceiveStream

from switchboard.transport import SpawnError, spawn_stdio

__all__: list[str] = []

_RUN_TIMEOUT = 120


def _switchboard(
    *args: str, cwd: Path | None = None, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "switchboard", *args],
        capture_output=True,
        text=True,
        timeout=_RUN_TIMEOUT,
        check=False,
        cwd=cwd,
        env=env,
    )


def _write(tmp_path: Path, text: str, name: str = "switchboard.toml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def _refused(path: Path, *, command: str = "check", **kw: object) -> str:
    """Run ``switchboard <command> --config path``; it must fail fast with exit 2 and no
    traceback. Returns stderr."""
    done = _switchboard(command, "--config", str(path), **kw)  # type: ignore[arg-type]
    assert done.returncode == 2, done.stdout + done.stderr
    assert "Traceback" not in done.stderr, done.stderr
    assert "agent_endpoint" not in done.stderr  # nothing was started
    return done.stderr


_CONNECTOR = '[[connectors]]\nid = "chat"\ncommand = ["true"]\n'
_NO_AGENT = '[agent]\ntransport = "none"\n'


def test_a_port_out_of_range_is_refused_with_the_range(tmp_path: Path) -> None:
    path = _write(tmp_path, '[agent]\ntransport = "http"\nport = 99999\n')
    err = _refused(path, command="run")
    assert "agent.port: 99999 is not a TCP port: use 1 to 65535, or 0 for any free port" in err


def test_a_store_whose_folder_cannot_be_made_is_refused_naming_it(tmp_path: Path) -> None:
    (tmp_path / "data").write_text("a file where a folder should be")
    path = _write(tmp_path, f'{_NO_AGENT}[store]\npath = "data/store.sqlite"\n')
    err = _refused(path, command="run")
    assert f"{tmp_path / 'data'} is a file, so the folder cannot be made" in err
    assert "sqlite3" not in err


def test_a_store_path_that_is_a_folder_is_refused(tmp_path: Path) -> None:
    (tmp_path / "db").mkdir()
    path = _write(tmp_path, f'{_NO_AGENT}[store]\npath = "db"\n')
    err = _refused(path, command="run")
    assert f"store.path {tmp_path / 'db'} is a folder; name a file in it" in err


def test_an_unknown_log_level_is_refused_with_the_levels(tmp_path: Path) -> None:
    path = _write(tmp_path, 'log_level = "VERBOSE"\n')
    err = _refused(path, command="run")
    assert "log_level: 'VERBOSE' is not a log level; did you mean 'DEBUG'?" in err
    assert "DEBUG, INFO, WARNING, ERROR, CRITICAL" in err


def test_a_log_level_on_the_command_line_is_checked_too(tmp_path: Path) -> None:
    path = _write(tmp_path, _NO_AGENT)
    done = _switchboard("--log-level", "verbose", "run", "--config", str(path))
    assert done.returncode == 2
    assert "'verbose' is not a log level" in done.stderr


def test_an_http_url_is_refused_naming_the_schemes_switchboard_dials(tmp_path: Path) -> None:
    path = _write(tmp_path, '[[connectors]]\nid = "web"\nurl = "http://127.0.0.1:8080/mcpl"\n')
    err = _refused(path, command="run")
    assert "url 'http://127.0.0.1:8080/mcpl' has the scheme 'http'" in err
    assert "tcp://host:port, ws://host[:port]/path or wss://host[:port]/path" in err


def test_a_tcp_url_without_a_port_is_refused(tmp_path: Path) -> None:
    path = _write(tmp_path, '[[connectors]]\nid = "t"\nurl = "tcp://127.0.0.1"\n')
    assert "names no port: write tcp://127.0.0.1:PORT" in _refused(path)


def test_a_missing_executable_is_named_by_check(tmp_path: Path) -> None:
    path = _write(tmp_path, '[[connectors]]\nid = "ghost"\ncommand = ["no-such-connector-xyz"]\n')
    err = _refused(path)
    assert "connector 'ghost': the program 'no-such-connector-xyz' is not on PATH" in err
    assert "give its full path in `command`" in err


def test_a_missing_program_path_is_named_against_the_config_folder(tmp_path: Path) -> None:
    path = _write(tmp_path, '[[connectors]]\nid = "ghost"\ncommand = ["./bin/bridge"]\n')
    err = _refused(path, cwd=Path("/"))
    assert f"the program {tmp_path / 'bin' / 'bridge'} does not exist" in err


def test_a_program_that_is_not_executable_says_chmod(tmp_path: Path) -> None:
    (tmp_path / "bridge.sh").write_text("#!/bin/sh\n")
    path = _write(tmp_path, '[[connectors]]\nid = "b"\ncommand = ["./bridge.sh"]\n')
    assert f"(chmod +x {tmp_path / 'bridge.sh'})" in _refused(path)


def test_a_missing_cwd_is_named_by_check(tmp_path: Path) -> None:
    path = _write(tmp_path, f'{_CONNECTOR}cwd = "checkout"\n')
    err = _refused(path)
    assert f"connector 'chat': its cwd {tmp_path / 'checkout'} does not exist" in err


def test_a_grant_typo_is_refused_with_the_near_pattern(tmp_path: Path) -> None:
    path = _write(tmp_path, f'{_CONNECTOR}grant = ["channel.*", "pushEvents"]\n')
    err = _refused(path, command="run")
    assert "grant entry 'channel.*' matches no capability path" in err
    assert "did you mean 'channels.*'?" in err


def test_a_single_bracket_connectors_table_gets_the_double_bracket_form(tmp_path: Path) -> None:
    path = _write(tmp_path, '[connectors]\nid = "chat"\ncommand = ["true"]\n')
    err = _refused(path, command="run")
    assert "`[connectors]` makes one table" in err
    assert "write `[[connectors]]` (two brackets) above each one" in err


def test_a_single_bracket_agents_table_gets_the_double_bracket_form(tmp_path: Path) -> None:
    path = _write(tmp_path, '[agents]\nhandle = "@ada"\n')
    assert "write `[[agents]]` (two brackets)" in _refused(path)


def test_a_double_bracket_agent_table_gets_the_single_bracket_form(tmp_path: Path) -> None:
    path = _write(tmp_path, '[[agent]]\ntransport = "stdio"\n')
    err = _refused(path)
    assert "write `[agent]` (one bracket); for several agents use [[agents]]" in err


def test_a_string_command_is_refused_with_the_list_to_write(tmp_path: Path) -> None:
    path = _write(tmp_path, '[[connectors]]\nid = "chat"\ncommand = "python x.py --stdio"\n')
    err = _refused(path, command="run")
    assert 'write command = ["python", "x.py", "--stdio"]' in err


def test_an_unknown_key_gets_the_near_key(tmp_path: Path) -> None:
    path = _write(tmp_path, '[[connectors]]\nid = "chat"\ncomand = ["true"]\n')
    err = _refused(path, command="run")
    assert "connectors.0.comand: `comand` is not a key of [[connectors]]; did you mean" in err
    assert "`command`?" in err


def test_a_top_level_key_under_a_table_is_told_to_move_up(tmp_path: Path) -> None:
    path = _write(tmp_path, '[store]\npath = "s.sqlite"\nlog_level = "DEBUG"\n')
    err = _refused(path)
    assert "`log_level` is a top-level key, but it sits in [store]" in err


def test_a_table_key_at_the_top_level_is_told_where_it_belongs(tmp_path: Path) -> None:
    path = _write(tmp_path, "port = 9000\n")
    assert "`port` is not a top-level key: it belongs in [agent]" in _refused(path)


def test_an_unset_variable_is_refused_naming_it_and_the_default_form(tmp_path: Path) -> None:
    path = _write(tmp_path, f'{_CONNECTOR}env = {{ TOKEN = "${{CHAT_TOKEN_XYZ}}" }}\n')
    env = {k: v for k, v in os.environ.items() if k != "CHAT_TOKEN_XYZ"}
    err = _refused(path, command="run", env=env)
    assert "connectors.0.env.TOKEN: the environment variable CHAT_TOKEN_XYZ is not set" in err
    assert "${CHAT_TOKEN_XYZ:-default}" in err


def test_a_missing_env_file_is_refused_naming_it(tmp_path: Path) -> None:
    path = _write(tmp_path, f'env_file = "secrets.env"\n{_NO_AGENT}')
    err = _refused(path, command="run")
    assert f"env_file {tmp_path / 'secrets.env'} does not exist" in err


def test_a_malformed_env_file_line_is_refused_by_number_without_its_text(tmp_path: Path) -> None:
    (tmp_path / "secrets.env").write_text("# comment\nGOOD=1\nnot a line s3cr3t\n")
    path = _write(tmp_path, f'env_file = "secrets.env"\n{_NO_AGENT}')
    err = _refused(path)
    assert "line 3: not a KEY=VALUE line" in err
    assert "s3cr3t" not in err


def test_a_home_in_prose_syntax_is_refused(tmp_path: Path) -> None:
    path = _write(tmp_path, '[agent]\nhome = ">>discord:general"\n')
    err = _refused(path)
    assert "home '>>discord:general' starts with '>', which is prose-routing syntax" in err


def test_bad_toml_is_refused_with_the_line(tmp_path: Path) -> None:
    path = _write(tmp_path, '[[connectors]]\nid = "chat\n')
    err = _refused(path, command="run")
    assert "is not valid TOML" in err
    assert "line 2" in err


def test_a_missing_config_file_is_refused_naming_it(tmp_path: Path) -> None:
    err = _refused(tmp_path / "nope.toml", command="run")
    assert f"config file {tmp_path / 'nope.toml'} does not exist" in err


def test_several_mistakes_are_listed_one_line_each(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        'log_level = "loud"\n[agent]\nport = -1\n[[connectors]]\nid = "c"\ncomand = ["x"]\n',
    )
    err = _refused(path)
    assert "is invalid (3 problems):" in err
    lines = [line for line in err.splitlines() if line.startswith("  - ")]
    assert len(lines) == 3, err
    assert any(line.startswith("  - agent.port: -1 is not a TCP port") for line in lines)


def test_quoted_numbers_and_yes_are_refused_not_converted_and_listed_at_once(
    tmp_path: Path,
) -> None:
    """``port = "8766"``, ``restart = "yes"``, a quoted float and a float for an integer are
    four mistakes, each said with the TOML line that fixes it; no pydantic text."""
    path = _write(
        tmp_path,
        '[agent]\ntransport = "http"\nport = "8766"\n'
        '[[connectors]]\nid = "c"\ncommand = ["true"]\nrestart = "yes"\n'
        'backoff_initial = "0.5"\nmax_frame_bytes = 1.5\n',
    )
    err = _refused(path, command="run")
    assert "is invalid (4 problems):" in err
    assert (
        "agent.port: `port` must be a whole number, not a string ('8766'); write port = 8766"
    ) in err
    assert (
        "connectors.0.restart: `restart` must be true or false, not a string ('yes'); "
        "write restart = true"
    ) in err
    assert "write backoff_initial = 0.5" in err
    assert (
        "connectors.0.max_frame_bytes: `max_frame_bytes` must be a whole number, not a number "
        "with a fraction (1.5)"
    ) in err
    assert "Input should be" not in err
    assert "pydantic" not in err


def test_check_counts_one_problem_in_the_singular(tmp_path: Path) -> None:
    path = _write(tmp_path, _NO_AGENT + '[[connectors]]\nid = "c"\ncommand = ["no-such-x"]\n')
    err = _refused(path)
    assert f"config file {path} has 1 problem:" in err


@pytest.mark.anyio
async def test_spawning_a_missing_working_folder_names_it_and_is_permanent(
    tmp_path: Path,
) -> None:
    missing = tmp_path / "gone"
    with pytest.raises(SpawnError) as caught:
        async with spawn_stdio(["true"], cwd=str(missing)):
            pass
    assert f"the working folder {missing}: No such file or directory" in str(caught.value)
    assert caught.value.permanent


# `run` with connectors that can never start: one ERROR each, no retry, the host goes on.


async def _lines_until(
    stream: ByteReceiveStream, buffer: bytearray, done: re.Pattern[str]
) -> list[str]:
    """Read stderr lines until one matches ``done``; returns every line read."""
    lines: list[str] = []
    while True:
        while (end := buffer.find(b"\n")) < 0:
            buffer += await stream.receive()
        line = bytes(buffer[: end + 1]).decode("utf-8", "replace")
        del buffer[: end + 1]
        lines.append(line)
        if done.search(line):
            return lines


@pytest.mark.anyio
async def test_a_connector_that_cannot_start_is_stopped_once_while_a_transient_one_retries(
    tmp_path: Path,
) -> None:
    """``ghost`` (no such program) and ``lost`` (no such cwd) get one ERROR each and no second
    attempt; ``flaky`` dials a closed port and is retried, each warning saying ``retry_in``.
    By the time ``flaky`` failed four times, a retried ghost would have shown up again (all
    share the same short backoff). Then SIGTERM stops the host cleanly."""
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        closed_port = probe.getsockname()[1]
    path = _write(
        tmp_path,
        f"{_NO_AGENT}"
        '[[connectors]]\nid = "ghost"\ncommand = ["no-such-connector-xyz"]\n'
        "backoff_initial = 0.05\nbackoff_max = 0.05\n"
        '[[connectors]]\nid = "lost"\ncommand = ["true"]\ncwd = "gone"\n'
        "backoff_initial = 0.05\nbackoff_max = 0.05\n"
        f'[[connectors]]\nid = "flaky"\nurl = "tcp://127.0.0.1:{closed_port}"\n'
        "backoff_initial = 0.05\nbackoff_max = 0.05\n",
    )
    process = await anyio.open_process(
        [sys.executable, "-m", "switchboard", "run", "--config", str(path)],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    assert process.stderr is not None
    buffer = bytearray()
    lines: list[str] = []
    try:
        with anyio.fail_after(60):
            for _ in range(4):
                lines += await _lines_until(
                    process.stderr, buffer, re.compile(r"connector_failed.*server_id=flaky")
                )
            process.send_signal(signal.SIGTERM)
            lines += await _lines_until(process.stderr, buffer, re.compile("shutdown_complete"))
            code = await process.wait()
    finally:
        if process.returncode is None:
            process.kill()
        await process.aclose()
    text = "".join(lines)
    assert code == 0, text
    assert "Traceback" not in text
    stopped = [line for line in lines if "connector_stopped" in line]
    assert len([line for line in stopped if "server_id=ghost" in line]) == 1, text
    assert len([line for line in stopped if "server_id=lost" in line]) == 1, text
    assert all("[error" in line and "retry=False" in line for line in stopped)
    assert "the program 'no-such-connector-xyz' is not on PATH" in text
    assert f"its cwd {tmp_path / 'gone'} does not exist" in text
    assert not [line for line in lines if "connector_failed" in line and "server_id=ghost" in line]
    flaky = [line for line in lines if "connector_failed" in line and "server_id=flaky" in line]
    assert all(re.search(r"retry_in=0\.0\d", line) for line in flaky), flaky
