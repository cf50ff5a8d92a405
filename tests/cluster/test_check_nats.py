"""``switchboard check`` of a ``[cluster]`` config also asks the NATS server."""

from __future__ import annotations

from pathlib import Path

from tests.cluster.conftest import NATS_URL
from tests.helpers import run_check
from tests.pg import ADMIN_URL

BASE = f'[store]\nbackend = "postgres"\nurl = "{ADMIN_URL}"\n[agent]\ntransport = "stdio"\n'


def test_check_refuses_a_cluster_whose_nats_server_does_not_answer(tmp_path: Path) -> None:
    path = tmp_path / "c.toml"
    path.write_text(BASE + '[cluster]\nnats_url = "nats://127.0.0.1:1"\ninstance_id = "sb-1"\n')
    done = run_check(path)
    assert done.returncode == 2, done.stdout
    assert "cluster.nats_url: the NATS server nats://127.0.0.1:1 does not answer" in done.stderr
    assert "Traceback" not in done.stderr


def test_check_passes_a_cluster_whose_database_and_nats_answer(tmp_path: Path) -> None:
    path = tmp_path / "c.toml"
    path.write_text(BASE + f'[cluster]\nnats_url = "{NATS_URL}"\ninstance_id = "sb-1"\n')
    done = run_check(path)
    assert done.returncode == 0, done.stderr
