"""``[store] backend/url`` and ``[cluster]``: what a config may say about cluster mode, and
what ``switchboard check`` says of it (the database is probed, ``[cluster]`` needs PostgreSQL).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from switchboard.config import ClusterConfig, ConfigError, load_config
from tests.helpers import run_check
from tests.pg import ADMIN_URL

POSTGRES = f'[store]\nbackend = "postgres"\nurl = "{ADMIN_URL}"\n'


def test_the_default_store_is_the_sqlite_file_and_there_is_no_cluster(tmp_path: Path) -> None:
    path = tmp_path / "c.toml"
    path.write_text("")
    config = load_config(path)
    assert config.store.backend == "sqlite"
    assert config.store.url is None
    assert config.cluster is None


def test_a_cluster_section_takes_its_defaults_and_expands_variables(tmp_path: Path) -> None:
    path = tmp_path / "c.toml"
    path.write_text(
        '[store]\nbackend = "postgres"\nurl = "postgresql://sb:${PGPASS}@db:5432/sb"\n'
        '[cluster]\nnats_url = "nats://${NATS_HOST}:4222"\nlease_ttl = "10s"\n'
    )
    config = load_config(path, env={"PGPASS": "s3cret", "NATS_HOST": "bus"})
    assert config.store.url == "postgresql://sb:s3cret@db:5432/sb"
    assert config.cluster is not None
    assert config.cluster.nats_url == "nats://bus:4222"
    assert config.cluster.lease_ttl == 10.0
    assert config.cluster.subject_prefix == "sb"
    assert config.cluster.instance_id  # hostname-pid by default
    assert config.cluster.head_interval == 0.25


@pytest.mark.parametrize(("given", "seconds"), [("0", 0.0), ("0.25", 0.25), ('"200ms"', None)])
def test_the_head_interval_is_a_duration_or_zero(
    tmp_path: Path, given: str, seconds: float | None
) -> None:
    path = tmp_path / "c.toml"
    path.write_text(POSTGRES + f"[cluster]\nhead_interval = {given}\n")
    if seconds is None:
        with pytest.raises(ConfigError, match="head_interval"):
            load_config(path)
    else:
        config = load_config(path)
        assert config.cluster is not None
        assert config.cluster.head_interval == seconds


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ('[cluster]\ninstance_id = "sb-1"\n', 'set backend = "postgres"'),
        ('[store]\nbackend = "postgres"\n', "needs `url`"),
        ('[store]\nurl = "postgresql://h/db"\n', 'set backend = "postgres" too'),
        ('[store]\nbackend = "postgres"\nurl = "mysql://h/db"\n', "must be a postgresql:// URL"),
        (POSTGRES + '[cluster]\nnats_url = "http://x"\n', "must be a nats:// URL"),
        (POSTGRES + '[cluster]\ninstance_id = "a b"\n', "instance_id"),
        (POSTGRES + "[cluster]\nlease_ttl = 0\n", "positive"),
        (POSTGRES + "[cluster]\nhead_interval = 6\n", "head_interval"),
        (POSTGRES + "[cluster]\nhead_interval = -1\n", "non-negative"),
        (POSTGRES + "[cluster]\nhold = -1\n", "non-negative"),
        (POSTGRES + '[cluster]\nsettle = "soon"\n', "is not a duration"),
        (POSTGRES + "[cluster]\nsettle = true\n", "duration"),
    ],
)
def test_a_cluster_mistake_is_refused_with_what_to_do(
    tmp_path: Path, text: str, words: str
) -> None:
    path = tmp_path / "c.toml"
    path.write_text(text)
    with pytest.raises(ConfigError, match=words.replace("(", r"\(").replace(")", r"\)")):
        load_config(path)


def test_the_handover_hold_and_settle_default_to_a_minute_and_half_a_minute(
    tmp_path: Path,
) -> None:
    path = tmp_path / "c.toml"
    path.write_text(POSTGRES + "[cluster]\n")
    cluster = load_config(path).cluster
    assert cluster is not None
    assert (cluster.hold, cluster.settle) == (60.0, 30.0)
    path.write_text(POSTGRES + '[cluster]\nhold = "2m"\nsettle = 0\n')
    cluster = load_config(path).cluster
    assert cluster is not None
    assert (cluster.hold, cluster.settle) == (120.0, 0.0)


@given(st.floats(min_value=0, max_value=1e9) | st.integers(min_value=0, max_value=10**9))
def test_any_non_negative_number_of_seconds_is_a_hold_and_a_settle(seconds: float) -> None:
    cluster = ClusterConfig.model_validate({"hold": seconds, "settle": seconds})
    assert cluster.hold == cluster.settle == float(seconds)


@given(
    st.floats(max_value=-1e-9)
    | st.integers(max_value=-1)
    | st.just(float("inf"))
    | st.just(float("nan"))
)
def test_a_negative_or_endless_hold_is_refused(seconds: float) -> None:
    with pytest.raises(ValueError, match="non-negative, finite"):
        ClusterConfig.model_validate({"hold": seconds})


def test_a_bad_database_url_never_shows_its_password(tmp_path: Path) -> None:
    path = tmp_path / "c.toml"
    path.write_text('[store]\nbackend = "postgres"\nurl = 5\n')
    with pytest.raises(ConfigError) as caught:
        load_config(path)
    assert "got 5" not in str(caught.value)


def test_check_refuses_a_cluster_without_postgres(tmp_path: Path) -> None:
    path = tmp_path / "c.toml"
    path.write_text('[cluster]\ninstance_id = "sb-1"\n')
    done = run_check(path)
    assert done.returncode == 2
    assert "[cluster] shares the durable things between instances" in done.stderr
    assert "Traceback" not in done.stderr


def test_check_probes_the_database_and_names_it_without_its_password(tmp_path: Path) -> None:
    path = tmp_path / "c.toml"
    path.write_text(
        '[store]\nbackend = "postgres"\nurl = "postgresql://postgres:hush@127.0.0.1:1/none"\n'
    )
    done = run_check(path)
    assert done.returncode == 2
    assert "store.url: the database postgresql://postgres@127.0.0.1:1/none does not answer" in (
        done.stderr
    )
    assert "hush" not in done.stderr + done.stdout


def test_check_passes_a_database_that_answers(tmp_path: Path) -> None:
    path = tmp_path / "c.toml"
    path.write_text(POSTGRES + '[agent]\ntransport = "stdio"\n')
    done = run_check(path)
    assert done.returncode == 0, done.stderr
    assert "store: PostgreSQL postgresql://postgres@127.0.0.1:5432/postgres (answers)" in (
        done.stdout
    )


def test_check_passes_retention_on_postgres_and_says_what_it_deletes(tmp_path: Path) -> None:
    path = tmp_path / "c.toml"
    path.write_text(
        POSTGRES + 'retain = "30d"\nmax_size = "2GB"\nretention_interval = "90s"\n'
        '[agent]\ntransport = "stdio"\n'
    )
    done = run_check(path)
    assert done.returncode == 0, done.stderr
    assert (
        "retention: deletes acknowledged messages older than 30d and oldest beyond "
        "2,000,000,000 bytes of batch rows, every 90s"
    ) in done.stdout
