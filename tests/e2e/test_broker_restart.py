"""The real Valkey restarted with its data lost while a real worker and the clock keep running
(DESIGN.md: "losing the broker loses no payment; sweeps find due work from the
database"). The worker holds a payout's job, a message delayed to the grant's not_before; the
restart breaks its connection, and Dramatiq then drops the delayed messages it held in memory
(``ConsumerThread``: a ``BrokerConnectionError`` empties its delay queue), while the new server has
none of them. Both processes must reconnect on their own (redis-py reconnects on the next command;
Dramatiq restarts its consumer), and the grants sweep must publish the job again: one CardCo call.

Real processes on the wall clock (``python -m dramatiq jobs``, ``python -m jobs.clock``), CardCo over
real HTTP, the test's own embedded Valkey on its own port, and the test's database."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest
import redis
import uvicorn

from gateway.app import create_app
from gateway.clock import SystemClock
from gateway.services import Services
from gateway.settings import build_settings
from paygate_local.servers import EmbeddedValkey, free_port
from provider_fake import CardCo, CardCoConfig
from provider_fake.app import create_app as cardco_app
from provider_fake.config import Account
from tests.conftest import LIVE_ACCOUNT, TEST_ACCOUNT, TEST_PEPPER, account_config
from tests.integration.payouts.conftest import World, furnish

pytestmark = pytest.mark.e2e

WAIT_S = 60.0
TIMINGS = {"clock_tick_s": 0.5, "payout_grant_lead_s": 2, "payout_grant_window_s": 60,
           "payout_send_deadline_s": 20}


def _wait(what: str, done: Callable[[], bool], timeout_s: float = WAIT_S) -> None:
    """Poll a real process's progress (never a deadline of the system under test)."""
    deadline = time.monotonic() + timeout_s
    while not done():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.1)


@pytest.fixture
def cardco_url() -> Iterator[tuple[CardCo, str]]:
    """CardCo on the wall clock, served by uvicorn on a loopback port."""
    accounts = [Account(id=str(a["id"]), api_key=str(a["api_key"]), webhook_secrets=list(a["webhook_secrets"]))  # type: ignore[call-overload]
                for a in (account_config(TEST_ACCOUNT), account_config(LIVE_ACCOUNT))]
    cardco = CardCo(CardCoConfig(accounts=accounts))
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(cardco_app(cardco), host="127.0.0.1", port=port, log_level="warning",
                                           lifespan="off", ws="none", http="h11"))
    thread = threading.Thread(target=server.run, name="cardco", daemon=True)
    thread.start()
    _wait("CardCo to start", lambda: server.started, 10)
    try:
        yield cardco, f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(10)


def _heartbeat(database_url: str, kind: str) -> datetime | None:
    with psycopg.connect(database_url) as conn:
        row = conn.execute("SELECT max(seen_at) FROM process_heartbeats WHERE kind = %s", (kind,)).fetchone()
    return row[0] if row else None


def _scalar(database_url: str, sql: str) -> Any:
    with psycopg.connect(database_url) as conn:
        row = conn.execute(sql).fetchone()
    return row[0] if row else None


async def test_a_valkey_restart_with_data_lost_loses_no_payout_and_worker_and_clock_recover(
        database_url: str, cardco_url: tuple[CardCo, str], tmp_path: Path) -> None:
    """Think also about a Valkey restart with data lost while the worker and clock
    keep running (redis-py reconnect; Dramatiq consumer recovering): prove the processes recover."""
    cardco, url = cardco_url
    valkey = EmbeddedValkey()
    port = valkey.port
    document = {"database_url": database_url, "redis_url": valkey.url, "token_pepper": TEST_PEPPER,
                "log_format": "console", "provider_accounts": [account_config(TEST_ACCOUNT, base_url=url),
                                                               account_config(LIVE_ACCOUNT, base_url=url)],
                **TIMINGS}
    config = tmp_path / "paygate.json"
    config.write_text(json.dumps(document))
    environment = {key: value for key, value in os.environ.items() if not key.startswith("PAYGATE_")} | {
        "PAYGATE_CONFIG": str(config), "DATABASE_URL": database_url, "REDIS_URL": valkey.url}
    worker_log = tmp_path / "worker.log"
    logs = [worker_log.open("wb"), (tmp_path / "clock.log").open("wb")]
    processes = [
        subprocess.Popen([sys.executable, "-m", "dramatiq", "jobs", "--processes", "1", "--threads", "2",
                          "--worker-shutdown-timeout", "2000"], env=environment, stdout=logs[0],
                         stderr=subprocess.STDOUT),
        subprocess.Popen([sys.executable, "-m", "jobs.clock"], env=environment, stdout=logs[1],
                         stderr=subprocess.STDOUT)]
    settings = build_settings(document)
    services = await Services.open(settings, SystemClock())
    try:
        _wait("a worker to take the clock's wake-up", lambda: _heartbeat(database_url, "worker") is not None)
        transport = httpx.ASGITransport(app=create_app(settings, services=services))
        async with httpx.AsyncClient(transport=transport, base_url="http://gateway.test") as http:
            world = await furnish(World(http, services, settings, SystemClock(), cardco))  # type: ignore[arg-type]
            await world.create(release_in=timedelta(seconds=TIMINGS["payout_grant_lead_s"] + 10))
            assert (await world.submit())["outcome"] == "Allowed"

        # The worker publishes the job (delayed to not_before, ~10 s away) and holds it.
        probe = redis.Redis(host="127.0.0.1", port=port)
        _wait("the worker to hold the delayed job", lambda: (
            _scalar(database_url, "SELECT count(*) FROM outbox_messages WHERE kind = 'payout-job'"
                                  " AND dispatched_at IS NOT NULL") == 1
            and probe.llen("dramatiq:paygate.DQ") == 0 and probe.hlen("dramatiq:paygate.DQ.msgs") == 1))
        probe.close()

        # Valkey goes away and comes back empty on the same port; the worker notices.
        valkey.stop()
        _wait("the worker's consumer to lose its connection",
              lambda: b"connection error" in worker_log.read_bytes(), 20)
        restarted_at = datetime.now().astimezone()
        valkey = EmbeddedValkey(port)

        _wait("CardCo to be asked for the payout",
              lambda: any(r["path"] == "/v1/payouts" and r["method"] == "POST" for r in cardco.store.requests))
        _wait("the worker and the clock to beat after the restart", lambda: all(
            (_heartbeat(database_url, kind) or restarted_at) > restarted_at for kind in ("worker", "clock")))
        assert [r["path"] for r in cardco.store.requests if r["method"] == "POST"] == ["/v1/payouts"]
        assert _scalar(database_url, "SELECT count(*) FROM payout_attempts") == 1
        # Which copy ran depends on timing: the redelivery sweep's (the worker dropped what it held
        # when its consumer lost the connection) or, if the consumer kept it, the worker's own. The
        # sweep's part is proven deterministically by tests/integration/test_broker_loss.py; here
        # the claim is that the fleet recovers and the payout is made exactly once.
        assert all(process.poll() is None for process in processes), "both processes kept running"
    finally:
        for process in processes:
            process.terminate()
        for process in processes:
            try:
                process.wait(15)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(5)
        for log in logs:
            log.close()
        await services.close()
        valkey.stop()
