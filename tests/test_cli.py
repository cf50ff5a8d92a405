"""The command line: version, config errors, and the embedded demo (issue #2)."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import anyio
import pytest

from switchboard import __version__
from switchboard.config import ConfigError, demo_config, load_config


def _run(*args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "switchboard", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def test_version_prints_the_package_version() -> None:
    done = _run("--version")
    assert done.returncode == 0
    assert done.stdout.strip() == f"switchboard {__version__}"


def test_run_with_a_missing_config_file_says_so_and_exits_2(tmp_path: Path) -> None:
    done = _run("run", "--config", str(tmp_path / "nope.toml"))
    assert done.returncode == 2
    assert "does not exist" in done.stderr


def test_the_demo_runs_to_the_end_and_shows_what_flowed(tmp_path: Path) -> None:
    store = tmp_path / "demo.sqlite"
    done = _run("demo", "--duration", "3", "--interval", "0.3", "--store", str(store))
    assert done.returncode == 0, done.stderr
    assert "registered channels: demo:#general" in done.stdout
    assert "<agent>" in done.stdout
    assert "demo finished" in done.stdout
    assert f"kept in {store}" in done.stdout
    assert store.exists()


def test_the_demo_without_a_store_says_its_temporary_store_is_removed() -> None:
    done = _run("demo", "--duration", "1", "--interval", "0.3")
    assert done.returncode == 0, done.stderr
    assert "the temporary store is removed as the demo ends" in done.stdout
    assert "kept in" not in done.stdout


def test_the_help_shows_plain_text_without_rst_backticks() -> None:
    done = _run("--help")
    assert done.returncode == 0
    assert "``" not in done.stdout
    assert "switchboard check --config FILE" in done.stdout


def test_a_config_with_an_unknown_key_is_refused_with_the_key(tmp_path: Path) -> None:
    path = tmp_path / "c.toml"
    path.write_text('[[connectors]]\nid = "x"\ncommand = ["true"]\ncolour = "red"\n')
    with pytest.raises(ConfigError, match="colour"):
        load_config(path)


def test_a_connector_needs_exactly_one_of_command_or_url(tmp_path: Path) -> None:
    path = tmp_path / "c.toml"
    path.write_text('[[connectors]]\nid = "x"\n')
    with pytest.raises(ConfigError, match="exactly one"):
        load_config(path)


def test_connector_ids_must_be_unique(tmp_path: Path) -> None:
    path = tmp_path / "c.toml"
    path.write_text(
        '[[connectors]]\nid = "x"\ncommand = ["a"]\n[[connectors]]\nid = "x"\nurl = "tcp://h:1"\n'
    )
    with pytest.raises(ConfigError, match="twice"):
        load_config(path)


def test_a_full_config_file_is_read(tmp_path: Path) -> None:
    path = tmp_path / "c.toml"
    path.write_text(
        """
log_level = "DEBUG"
[store]
path = "s.sqlite"
synchronous = "full"
[agent]
name = "ada"
transport = "http"
port = 9000
[[connectors]]
id = "zulip"
url = "ws://127.0.0.1:8080/mcpl"
grant = ["channels.*"]
channels = ["zulip:*"]
"""
    )
    config = load_config(path)
    assert config.store.synchronous == "full"
    assert config.agent.name == "ada"
    (connector,) = config.connectors
    assert connector.url == "ws://127.0.0.1:8080/mcpl"
    assert connector.channels == ["zulip:*"]


def test_the_demo_config_spawns_the_bundled_connector(tmp_path: Path) -> None:
    config = demo_config(str(tmp_path / "d.sqlite"))
    (connector,) = config.connectors
    assert connector.command is not None
    assert connector.command[1:3] == ["-m", "switchboard.connectors.demo"]


def test_conformance_server_is_reachable_from_the_switchboard_command() -> None:
    done = _run("conformance", "server", "--list")
    assert done.returncode == 0, done.stderr
    assert "server.handshake.advertisement_shape" in done.stdout


def test_conformance_host_is_reachable_from_the_switchboard_command() -> None:
    done = _run("conformance", "host", "--list")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip()


def test_a_log_level_before_conformance_still_reaches_the_kit() -> None:
    for words in (["--log-level", "DEBUG"], ["--log-level=INFO"]):
        done = _run(*words, "conformance", "server", "--list")
        assert done.returncode == 0, done.stderr
        assert "server.handshake.advertisement_shape" in done.stdout


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("signum", "said"), [(signal.SIGINT, "Ctrl-C"), (signal.SIGTERM, "SIGTERM")]
)
async def test_a_signal_ends_the_demo_in_order_with_a_summary_and_no_leftovers(
    tmp_path: Path, signum: signal.Signals, said: str
) -> None:
    """Ctrl-C (SIGINT, as a terminal sends it) or SIGTERM mid-demo: no traceback, the
    closing line says what stopped it and what it did, exit status 0, and the temporary
    store's folder is gone."""
    temp = tmp_path / "tmp"
    temp.mkdir()
    env = {**os.environ, "TMPDIR": str(temp)}
    argv = [sys.executable, "-m", "switchboard", "demo", "--duration", "60", "--interval", "0.2"]
    out = bytearray()
    with anyio.fail_after(60):
        async with await anyio.open_process(argv, env=env) as process:
            assert process.stdout is not None
            assert process.stderr is not None
            while b"<agent>" not in out:
                out.extend(await process.stdout.receive())
            (made,) = temp.iterdir()
            assert made.name.startswith("switchboard-demo-")
            process.send_signal(signum)
            async for chunk in process.stdout:
                out.extend(chunk)
            err = b"".join([chunk async for chunk in process.stderr]).decode()
            code = await process.wait()
    text = out.decode()
    assert code == 0, err
    assert "Traceback" not in err + text
    assert "KeyboardInterrupt" not in err
    (last,) = [line for line in text.splitlines() if line.startswith("demo ")][-1:]
    assert last.startswith(f"demo stopped by {said} after "), text
    assert "Try next: `switchboard demo --agent stdio`" in text
    assert re.search(r": \d+ messages? stored, \d+ repl(y|ies) sent; the temporary store is ", last)
    assert list(temp.iterdir()) == []


README = Path(__file__).resolve().parent.parent / "README.md"
_COUNTS = re.compile(r"\d+ messages? stored, \d+ repl(?:y|ies) sent")


def _readme_sample() -> tuple[list[str], list[str]]:
    """README's sample demo output: the lines before its ``...`` and the lines after."""
    text = README.read_text(encoding="utf-8")
    start = text.index("```text\n[demo] connected") + len("```text\n")
    lines = text[start : text.index("\n```", start)].splitlines()
    cut = lines.index("...")
    return lines[:cut], lines[cut + 1 :]


def test_the_readme_sample_is_what_the_demo_prints_from_start_to_end() -> None:
    """README's two set-up commands end in `switchboard demo`; what it shows there is the
    start and the end of a real run, word for word (counts may differ with timing)."""
    head, tail = _readme_sample()
    done = _run("demo", timeout=120)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[: len(head)] == head, done.stdout
    assert [_COUNTS.sub("N", line) for line in lines[-len(tail) :]] == [
        _COUNTS.sub("N", line) for line in tail
    ], done.stdout
