"""bench/notifications.py's verdict on a run that sent its prepared notifications again
(bench/README.md, "python bench/notifications.py"): such a unique or duplicates run measured
duplicates answered from memory too, and is reported NOT CLEAN; a redeliveries run wraps by design."""

from __future__ import annotations

import pytest

from bench.notifications import not_clean, report

RUNS = [
    {"senders": 16, "mix": "unique", "wrapped": 2.0},
    {"senders": 16, "mix": "duplicates", "wrapped": 0.0},
    {"senders": 16, "mix": "redeliveries", "wrapped": 190.0},
]


def test_only_a_unique_or_duplicates_run_that_wrapped_is_not_clean() -> None:
    assert not_clean(RUNS) == [RUNS[0]]
    assert not_clean([{**RUNS[1], "wrapped": 1.0}]) == [{**RUNS[1], "wrapped": 1.0}]
    assert not_clean(RUNS[1:]) == []


def test_the_report_says_so(capsys: pytest.CaptureFixture[str]) -> None:
    figures = {"rate": 1000.0, "p99_ms": 10.0, "non_2xx": 0.0, "pgbench_tps": 2000.0, "ratio_pgbench": 0.5,
               "bare_rate": 30000.0, "ratio_bare": 0.03, "round_trips": 3.0, "statements": 5.0,
               "gateway_cpu_us": 400.0, "gateway_cpu_us_one_client": 800.0, "worker_connections": []}
    report([{**run, **figures} for run in RUNS], 15, 1)
    lines = [line for line in capsys.readouterr().out.splitlines() if line.startswith("NOT CLEAN")]
    assert lines == [lines[0]] and "16 senders, unique" in lines[0]
