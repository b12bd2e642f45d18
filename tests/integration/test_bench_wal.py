"""A benchmark's PostgreSQL has its WAL segments ready before it is measured (bench/support.py
``ready_wal``, docs/decisions/0083): the WAL a run writes goes into segments made beforehand, as a
server in service recycles them, so no commit waits while a new 16 MB segment is zero-filled.

Each test runs its own embedded PostgreSQL (a fresh cluster, as every benchmark starts one) and
judges by the cluster's own ``pg_wal`` directory: writing several segments' worth of WAL after
``ready_wal`` must leave the set of segment files unchanged.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

from bench.support import checkpoint_cycle, ready_wal, write_wal_segments
from paygate_local.servers import EmbeddedPostgres
from tests.server_dirs import server_dir

# More than the 5 segments PostgreSQL keeps for reuse at least (min_wal_size 80 MB).
READY = 12


@pytest.fixture
def cluster() -> Iterator[tuple[str, Path]]:
    """A fresh cluster's URL and data directory, removed after."""
    with server_dir("paygate-wal-pg-") as folder:
        server = EmbeddedPostgres(folder / "pg", ephemeral=True)
        try:
            yield server.url(), folder / "pg"
        finally:
            server.stop()


def _segments(pgdata: Path) -> set[str]:
    return {name.name for name in (pgdata / "pg_wal").iterdir() if len(name.name) == 24}


def _write(url: str, count: int) -> None:
    with psycopg.connect(url, autocommit=True) as conn:
        write_wal_segments(conn, count)


def test_a_readied_cluster_writes_its_wal_into_segments_it_already_has(cluster: tuple[str, Path]) -> None:
    url, pgdata = cluster
    ready_wal(url, READY)
    before = _segments(pgdata)
    assert len(before) >= READY
    _write(url, READY - 2)
    assert _segments(pgdata) == before


def test_a_fresh_cluster_makes_a_new_segment_for_each_one_it_fills(cluster: tuple[str, Path]) -> None:
    """The control: without ``ready_wal`` the same writes make new segment files (what the
    benchmarks measured before, a stall of every commit each time)."""
    url, pgdata = cluster
    before = _segments(pgdata)
    _write(url, READY - 2)
    # The first switch may stay in the segment initdb left: every one after makes a file.
    assert len(_segments(pgdata) - before) >= READY - 3


def test_a_measured_run_starts_a_checkpoint_cycle_and_counts_the_checkpoints_within_it(
        cluster: tuple[str, Path]) -> None:
    """bench/support.py ``checkpoint_cycle``: the CHECKPOINT that opens the cycle is not the run's,
    and one that starts during the run is counted (the figure a benchmark reports beside its rates)."""
    url, _ = cluster
    with checkpoint_cycle(url) as quiet:
        with psycopg.connect(url) as conn:
            conn.execute("SELECT 1")
    with checkpoint_cycle(url) as busy:
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute("CHECKPOINT")
    assert (quiet, busy) == ({"checkpoints": 0}, {"checkpoints": 1})
