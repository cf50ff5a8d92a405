"""``switchboard check`` of a ``[cluster]`` config also asks the NATS server."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.cluster.conftest import NATS_URL
from tests.pg import ADMIN_URL

BASE = f'[store]\nbackend = "postgres"\nurl = "{ADMIN_URL}"\n[agent]\ntransport = "stdio"\n'


def _check(path: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "switchboard", "check", "--config", str(path)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_check_refuses_a_cluster_whose_nats_server_does_not_answer(tmp_path: Path) -> None:
    path = tmp_path / "c.toml"
    path.write_text(BASE + '[cluster]\nnats_url = "nats://127.0.0.1:1"\ninstance_id = "sb-1"\n')
    done = _check(path)
    assert done.returncode == 2, done.stdout
    assert "cluster.nats_url: the NATS server nats://127.0.0.1:1 does not answer" in done.stderr
    assert "Traceback" not in done.stderr


def test_check_passes_a_cluster_whose_database_and_nats_answer(tmp_path: Path) -> None:
    path = tmp_path / "c.toml"
    path.write_text(BASE + f'[cluster]\nnats_url = "{NATS_URL}"\ninstance_id = "sb-1"\n')
    done = _check(path)
    assert done.returncode == 0, done.stderr
