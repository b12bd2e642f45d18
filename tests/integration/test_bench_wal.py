"""A benchmark's PostgreSQL has its WAL segments ready before it is measured (bench/support.py
``ready_wal``, docs/decisions/0083): the WAL a run writes goes into segments made beforehand, as a
server in service recycles them, so no commit waits while a new 16 MB segment is zero-filled.

The test runs its own embedded PostgreSQL (a fresh cluster, as every benchmark starts one) and
judges by the cluster's own ``pg_wal`` directory: writing several segments' worth of WAL after
``ready_wal`` must leave the set of segment files unchanged.
"""

from __future__ import annotations

from pathlib import Path

import psycopg

from bench.support import ready_wal
from paygate_local.servers import EmbeddedPostgres
from tests.server_dirs import server_dir

# More than the 5 segments PostgreSQL keeps for reuse at least (min_wal_size 80 MB).
READY = 12


def _segments(pgdata: Path) -> set[str]:
    return {name.name for name in (pgdata / "pg_wal").iterdir() if len(name.name) == 24}


def _write_segments(url: str, count: int) -> None:
    """``count`` segments' worth of WAL: a record, then a switch to the next segment, each time."""
    with psycopg.connect(url, autocommit=True) as conn:
        for _ in range(count):
            conn.execute("SELECT pg_logical_emit_message(false, 'test', 'wal'), pg_switch_wal()")


def test_a_readied_cluster_writes_its_wal_into_segments_it_already_has() -> None:
    with server_dir("paygate-wal-pg-") as folder:
        server = EmbeddedPostgres(folder / "pg", ephemeral=True)
        try:
            url = server.url()
            ready_wal(url, READY)
            before = _segments(folder / "pg")
            assert len(before) >= READY
            _write_segments(url, READY - 2)
            assert _segments(folder / "pg") == before
        finally:
            server.stop()


def test_a_fresh_cluster_makes_a_new_segment_for_each_one_it_fills() -> None:
    """The control: without ``ready_wal`` the same writes make new segment files (what the
    benchmarks measured before, a stall of every commit each time)."""
    with server_dir("paygate-wal-pg-") as folder:
        server = EmbeddedPostgres(folder / "pg", ephemeral=True)
        try:
            url = server.url()
            before = _segments(folder / "pg")
            _write_segments(url, READY - 2)
            # The first switch may stay in the segment initdb left: every one after makes a file.
            assert len(_segments(folder / "pg") - before) >= READY - 3
        finally:
            server.stop()
