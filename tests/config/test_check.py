"""``switchboard check --config FILE``: it validates a config and explains it without starting
anything (issue #13, item 1), and what ``load_config`` does with paths and the environment
that the check shows: relative paths against the config's folder, ``env_file``.

What this module knows: the command's exit codes and the lines of its summary. What it
deliberately doesn't: the words of each single mistake (tests/config/test_mistakes.py).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from switchboard.config import load_config
from switchboard.config.check import machine_problems, program_argv, summary
from tests.helpers import run_check

__all__: list[str] = []


def test_a_good_config_passes_with_a_short_summary_and_starts_nothing(tmp_path: Path) -> None:
    path = tmp_path / "switchboard.toml"
    path.write_text(
        '[store]\npath = "data/s.sqlite"\n[agent]\ntransport = "stdio"\n'
        f'[[connectors]]\nid = "demo"\ncommand = ["{sys.executable}", "-m", "switchboard"]\n'
        '[[connectors]]\nid = "chat"\nurl = "ws://127.0.0.1:9/mcpl"\n'
    )
    done = run_check(path, cwd=Path("/"))
    assert done.returncode == 0, done.stderr
    assert f"config file {path} is fine:" in done.stdout
    assert "connectors (2): demo (" in done.stdout
    assert "chat (ws://127.0.0.1:9/mcpl)" in done.stdout
    assert "agents (1): @agent" in done.stdout
    assert f"store: {tmp_path / 'data' / 's.sqlite'} (will be created)" in done.stdout
    assert "agent endpoint: stdio" in done.stdout
    assert not (tmp_path / "data").exists()  # nothing was made
    assert "Traceback" not in done.stderr


def test_an_http_endpoint_is_shown_as_its_url_and_its_token_file_is_checked(
    tmp_path: Path,
) -> None:
    path = tmp_path / "switchboard.toml"
    path.write_text('[agent]\ntransport = "http"\nport = 8799\ntoken_file = "agent.token"\n')
    done = run_check(path)
    assert done.returncode == 2
    assert str(tmp_path / "agent.token") in done.stderr
    assert "does not exist" in done.stderr
    token = tmp_path / "agent.token"
    token.write_text("t" * 32)
    token.chmod(0o600)
    done = run_check(path)
    assert done.returncode == 0, done.stderr
    assert "agent endpoint: http://127.0.0.1:8799/mcp" in done.stdout


def test_every_machine_problem_is_listed_at_once(tmp_path: Path) -> None:
    path = tmp_path / "switchboard.toml"
    (tmp_path / "blocker").write_text("")
    path.write_text(
        '[store]\npath = "blocker/s.sqlite"\n'
        '[[connectors]]\nid = "a"\ncommand = ["no-such-program-abc"]\n'
        '[[connectors]]\nid = "b"\ncommand = ["true"]\ncwd = "nowhere"\n'
    )
    done = run_check(path)
    assert done.returncode == 2
    assert "has 3 problems:" in done.stderr
    assert "connector 'a': the program 'no-such-program-abc' is not on PATH" in done.stderr
    assert f"connector 'b': its cwd {tmp_path / 'nowhere'} does not exist" in done.stderr
    assert "so the folder cannot be made" in done.stderr


def test_relative_paths_resolve_against_the_config_folder_not_the_working_folder(
    tmp_path: Path,
) -> None:
    (tmp_path / "bridge").mkdir()
    path = tmp_path / "conf" / "switchboard.toml"
    path.parent.mkdir()
    path.write_text(
        '[store]\npath = "rel.sqlite"\n'
        '[agent]\ntransport = "http"\ntoken_file = "../agent.token"\n'
        '[[connectors]]\nid = "a"\ncommand = ["./run.sh", "x/y"]\ncwd = "../bridge"\n'
        '[[connectors]]\nid = "b"\ncommand = ["bin/tool"]\n'
        '[[connectors]]\nid = "c"\ncommand = ["node", "dist/index.js"]\n'
        '[[connectors]]\nid = "d"\ncommand = ["/abs/tool"]\ncwd = "/srv"\n'
    )
    config = load_config(path)
    folder = tmp_path / "conf"
    assert config.store.path == str(folder / "rel.sqlite")
    assert config.agent.token_file == str(folder / ".." / "agent.token")
    a, b, c, d = config.connectors
    assert a.cwd == str(folder / ".." / "bridge")
    assert a.command == [str(folder / ".." / "bridge" / "run.sh"), "x/y"]
    assert b.command == [str(folder / "bin" / "tool")]
    assert c.command == ["node", "dist/index.js"]
    assert (d.cwd, d.command) == ("/srv", ["/abs/tool"])


def test_a_memory_store_and_an_absolute_store_are_left_alone(tmp_path: Path) -> None:
    for given in (":memory:", "/var/lib/switchboard/s.sqlite"):
        path = tmp_path / "c.toml"
        path.write_text(f'[store]\npath = "{given}"\n')
        assert load_config(path).store.path == given


def test_a_program_beside_the_interpreter_is_found_when_not_on_path(tmp_path: Path) -> None:
    """``switchboard-demo-connector`` is installed beside the interpreter, which need not be
    on PATH (a venv that was not activated)."""
    path = tmp_path / "c.toml"
    path.write_text(
        '[[connectors]]\nid = "demo"\ncommand = ["switchboard-demo-connector", "--hello"]\n'
        'env = { PATH = "/nonexistent" }\n'
    )
    config = load_config(path)
    (connector,) = config.connectors
    beside = Path(sys.executable).parent / "switchboard-demo-connector"
    assert program_argv(connector) == [str(beside), "--hello"]
    assert machine_problems(config) == []


def test_the_summary_says_whether_the_store_exists(tmp_path: Path) -> None:
    store = tmp_path / "s.sqlite"
    store.write_bytes(b"")
    path = tmp_path / "c.toml"
    path.write_text(f'[store]\npath = "{store}"\n')
    lines = summary(load_config(path), "stdio")
    assert f"store: {store} (exists)" in lines
    assert "connectors (0): none" in lines
    assert os.path.isabs(load_config(path).store.path)


def test_the_summary_says_what_retention_deletes_and_says_nothing_without_it(
    tmp_path: Path,
) -> None:
    path = tmp_path / "c.toml"
    path.write_text('[store]\nmax_size = "2GiB"\nretention_interval = "1h30m"\n')
    lines = summary(load_config(path), "stdio")
    assert (
        "retention: deletes acknowledged messages oldest beyond 2,147,483,648 bytes of pages "
        "in use, every 90m"
    ) in lines
    path.write_text("")
    assert not [line for line in summary(load_config(path), "stdio") if "retention" in line]


def test_a_python_connector_whose_interpreter_cannot_import_its_module_is_a_problem(
    tmp_path: Path,
) -> None:
    """The python3 on this PATH is the base interpreter, outside the virtual environment, as
    a desktop client's PATH finds the system's: it has no switchboard, so the connector would
    die at once with ``No module named 'switchboard'``; the check says so and names the fix."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    base = Path(sys.base_prefix) / "bin" / f"python{sys.version_info[0]}.{sys.version_info[1]}"
    (bin_dir / "python3").symlink_to(base)
    path = tmp_path / "switchboard.toml"
    path.write_text(
        '[[connectors]]\nid = "demo"\n'
        'command = ["python3", "-m", "switchboard.connectors.demo", "--hello"]\n'
        '[[connectors]]\nid = "mine"\n'
        f'command = ["{sys.executable}", "-u", "-m", "no_such_connector_module"]\n'
        '[[connectors]]\nid = "script"\n'
        f'command = ["{sys.executable}", "connector.py"]\ncwd = "{tmp_path}"\n'
        '[[connectors]]\nid = "fine"\n'
        f'command = ["{sys.executable}", "-m", "switchboard.connectors.demo"]\n'
    )
    done = run_check(path, env={**os.environ, "PATH": str(bin_dir)})
    assert done.returncode == 2, done.stdout
    assert "has 3 problems" in done.stderr
    assert (
        f"connector 'demo': python3 ({bin_dir / 'python3'}) cannot import "
        "switchboard.connectors.demo: "
        "ModuleNotFoundError: No module named 'switchboard'; "
        'use command = ["switchboard-demo-connector", ...] instead'
    ) in done.stderr
    assert "connector 'mine':" in done.stderr
    assert "No module named 'no_such_connector_module'" in done.stderr
    assert f"would run connector.py, which does not exist ({tmp_path / 'connector.py'})" in (
        done.stderr
    )
    assert "'fine'" not in done.stderr
