"""``paygate campaign`` as testers run it: the real command starts its own PostgreSQL,
Valkey and fleet, drives checkouts and payouts over HTTP while CardCo misbehaves, kills a worker,
a web process and the clock, restarts PostgreSQL and the broker, settles, checks every invariant
and writes its JSON report (README, "Fault campaign with real processes").

The default test run keeps a short sample (about 90 s on 2 cores); ``pytest -m campaign`` runs
the 300-checkout run and the full default campaign (1,000 checkouts, 100 payouts) and checks
that every fault kind fired. ``PAYGATE_CAMPAIGN_SEED`` picks the
seed of both (default 1); a failure prints the command that reproduces it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import psutil
import pytest

from paygate_local.campaign.invariants import CHECKS

pytestmark = pytest.mark.e2e
SEED = int(os.environ.get("PAYGATE_CAMPAIGN_SEED", "1"))
KEYS = {"seed", "operations", "faults", "kills", "restarts", "violations", "wall_s", "faults_fired", "outcomes",
        "escalations", "pauses", "outages"}


@pytest.fixture
def data_dir(work_dir: Path) -> Path:
    """The campaign's directory, outside pytest's ``pytest-of-<user>`` (tests/e2e/conftest.py): its
    PostgreSQL restarts mid-run (a disruption that fails now fails the run)."""
    return work_dir / "campaign"


def _campaign(tmp_path: Path, data_dir: Path, *flags: str, timeout_s: float) -> dict[str, object]:
    # A tester's machine: no servers configured, so the campaign starts its own.
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "REDIS_URL")}
    result_path = tmp_path / "campaign.json"
    done = subprocess.run([sys.executable, "-m", "gateway.cli", "campaign", "--seed", str(SEED), *flags,
                           "--data-dir", str(data_dir), "--json", str(result_path)],
                          capture_output=True, text=True, env=env, cwd=tmp_path, timeout=timeout_s)
    assert done.returncode == 0, done.stdout[-6000:] + done.stderr[-3000:]
    assert "OK: every invariant held." in done.stdout
    leftovers = [p for p in psutil.process_iter() if _started_by(p, str(data_dir))]
    assert leftovers == [], f"left running: {[p.cmdline() for p in leftovers]}"
    document: dict[str, object] = json.loads(result_path.read_text())
    return document


def _started_by(process: psutil.Process, data_dir: str) -> bool:
    """The fleet's processes carry the campaign's configuration, its PostgreSQL its data directory."""
    try:
        return data_dir in " ".join(process.cmdline()) + process.environ().get("PAYGATE_CONFIG", "")
    except psutil.Error:
        return False


def _check(document: dict[str, object], checkouts: int, payouts: int) -> None:
    assert set(document) == KEYS
    assert document["seed"] == SEED
    operations: dict[str, int] = document["operations"]  # type: ignore[assignment]
    assert sum(n for kind, n in operations.items() if kind.startswith("checkout:")) == checkouts
    assert sum(n for kind, n in operations.items() if kind.startswith("payout:")) == payouts
    assert operations["status-poll"] > checkouts and operations["payment-post"] >= checkouts
    faults: dict[str, int] = document["faults"]  # type: ignore[assignment]
    assert any(kind.startswith("create_payment:") for kind in faults)
    assert any(kind.startswith("webhook:") for kind in faults)
    fired: dict[str, int] = document["faults_fired"]  # type: ignore[assignment]
    assert any(kind.startswith("create_payment:") for kind in fired)
    assert any(kind.startswith("webhook:") for kind in fired)
    outcomes: dict[str, dict[str, int]] = document["outcomes"]  # type: ignore[assignment]
    assert sum(outcomes["checkouts"].values()) == checkouts and sum(outcomes["payouts"].values()) == payouts
    kills: dict[str, int] = document["kills"]  # type: ignore[assignment]
    assert set(kills) == {"worker", "web", "clock"} and min(kills.values()) >= 1
    assert document["violations"] == dict.fromkeys(CHECKS, 0)
    assert isinstance(document["wall_s"], float) and document["wall_s"] > 0
    outages: dict[str, dict[str, Any]] = document["outages"]  # type: ignore[assignment]
    assert set(outages) == {"postgres", "broker", "sinks", "provider"}
    assert set(outages["sinks"]) == {"merchant", "alert"}


def _fired_twice(document: dict[str, object]) -> None:
    """Scale: the default run "includes every fault kind above at least twice"."""
    kills: dict[str, int] = document["kills"]  # type: ignore[assignment]
    assert min(kills.values()) >= 2
    assert sum(document["pauses"].values()) >= 2  # type: ignore[attr-defined]
    outages: dict[str, Any] = document["outages"]  # type: ignore[assignment]
    assert outages["postgres"]["crashes"] >= 2 and outages["postgres"]["restarts"] >= 6
    assert outages["postgres"]["down_s"] >= 20 and outages["broker"]["down_s"] >= 20
    assert outages["broker"]["restarts"] >= 4 and outages["provider"]["lookup_storms"] >= 2
    for fault in ("errors", "hangs", "downs"):
        assert outages["sinks"]["merchant"][fault] + outages["sinks"]["alert"][fault] >= 2
    fired: dict[str, int] = document["faults_fired"]  # type: ignore[assignment]
    assert sum(n for kind, n in fired.items() if kind.endswith(":rate_limit")) >= 2


@pytest.mark.timeout(400)
def test_a_short_campaign_kills_and_restarts_everything_and_every_invariant_holds(tmp_path: Path,
                                                                                 data_dir: Path) -> None:
    """CI: "a short sample of it (about 90 s, a few hundred operations, at least one
    worker kill and one broker restart)", through the real command and its JSON."""
    document = _campaign(tmp_path, data_dir, "--checkouts", "150", "--payouts", "15", timeout_s=380)
    _check(document, 150, 15)
    assert document["restarts"] == {"postgres": 1, "broker": 1}


@pytest.mark.campaign
@pytest.mark.timeout(1200)
def test_a_campaign_of_300_checkouts_pauses_a_worker_past_its_lease_crashes_postgres_and_takes_servers_down(
        tmp_path: Path, data_dir: Path) -> None:
    """Scale: --checkouts 300 --payouts 30 "includes at least one pause past a lease,
    one PostgreSQL crash (-m immediate), one broker outage and one sink outage, besides the kills
    and restarts it has today": every fault kind fires at least once."""
    document = _campaign(tmp_path, data_dir, "--checkouts", "300", "--payouts", "30", timeout_s=1100)
    _check(document, 300, 30)
    assert sum(document["pauses"].values()) >= 1  # type: ignore[attr-defined]
    outages: dict[str, Any] = document["outages"]  # type: ignore[assignment]
    assert outages["postgres"]["crashes"] >= 1 and outages["postgres"]["down_s"] >= 10
    assert outages["broker"]["restarts"] >= 2 and outages["broker"]["down_s"] >= 10
    for fault in ("errors", "hangs", "downs"):
        assert outages["sinks"]["merchant"][fault] + outages["sinks"]["alert"][fault] >= 1
    assert outages["provider"]["lookup_storms"] >= 1
    kills: dict[str, int] = document["kills"]  # type: ignore[assignment]
    assert kills["worker"] >= 3  # one, then both at once
    fired: dict[str, int] = document["faults_fired"]  # type: ignore[assignment]
    assert sum(n for kind, n in fired.items() if kind.endswith(":rate_limit")) >= 1


@pytest.mark.campaign
@pytest.mark.timeout(3600)
def test_the_full_default_campaign_holds_every_invariant(tmp_path: Path, data_dir: Path) -> None:
    """Defaults 1,000 checkouts and 100 payouts."""
    document = _campaign(tmp_path, data_dir, timeout_s=3500)
    _check(document, 1000, 100)
    _fired_twice(document)
