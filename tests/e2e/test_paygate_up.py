"""``paygate up`` end to end, as a user runs it (API.md, Command line): the real command starts the
embedded servers and every process, answers ``/readyz`` with 200, writes ``paygate-demo.json``,
lets the CLI create a token against it, and on SIGINT stops every process and server it started.
A process killed under it is restarted while the others keep running."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import IO, Any

import httpx
import psutil
import pytest
import redis

from paygate_local.servers import free_port

pytestmark = pytest.mark.e2e

START_TIMEOUT_S = 90
STOP_TIMEOUT_S = 30
DEMO_KEYS = {"gateway_url", "provider_url", "control_url", "tokens", "customer_id", "tenant_id",
             "provider_accounts", "merchant_sink_url", "alert_sink_url", "settings"}


def _environment() -> dict[str, str]:
    # The user's machine: no servers configured, so paygate up starts the embedded ones.
    return {key: value for key, value in os.environ.items() if key not in ("DATABASE_URL", "REDIS_URL")}


def _wait_for(path: Path, process: subprocess.Popen[bytes]) -> dict[str, object]:
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise AssertionError(f"paygate up exited early with {process.returncode}")
        if path.exists():
            loaded: dict[str, object] = json.loads(path.read_text())
            return loaded
        time.sleep(0.2)
    raise AssertionError("paygate-demo.json did not appear")


def _start_up(work_dir: Path, log: IO[bytes]) -> tuple[subprocess.Popen[bytes], int, int]:
    """``paygate up --rehearsal`` in ``work_dir/data``; the process and its web and provider ports."""
    web_port, provider_port = free_port(), free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "gateway.cli", "up", "--data-dir", str(work_dir / "data"), "--web-port", str(web_port),
         "--provider-port", str(provider_port), "--rehearsal"],
        stdout=log, stderr=subprocess.STDOUT, env=_environment(), cwd=work_dir)
    return process, web_port, provider_port


def test_paygate_up_runs_the_system_and_stops_it_cleanly(work_dir: Path) -> None:
    data_dir = work_dir / "data"
    log = (work_dir / "up.log").open("wb")
    process, web_port, provider_port = _start_up(work_dir, log)
    try:
        demo: dict[str, Any] = _wait_for(data_dir / "paygate-demo.json", process)
        children = psutil.Process(process.pid).children(recursive=True)
        # pg_ctl daemonizes the server, so it is not among the children: follow its pid file.
        postgres = psutil.Process(int((data_dir / "pg" / "postmaster.pid").read_text().split()[0]))
        broker_url = json.loads((data_dir / "runtime.json").read_text())["redis_url"]

        assert DEMO_KEYS <= demo.keys()
        assert demo["gateway_url"] == f"http://127.0.0.1:{web_port}"
        assert demo["control_url"] == f"http://127.0.0.1:{provider_port}/_control"
        assert set(demo["tokens"]) == {"merchant", "customer", "operator", "clerk", "approver", "admin"}  # type: ignore[arg-type]
        accounts = demo["provider_accounts"]
        assert [a["id"] for a in accounts] == [  # type: ignore[union-attr,index]
            "cardco:acct_store:test", "cardco:acct_store:live", "stripe:acct_store:test"]
        stripe_account = accounts[2]  # type: ignore[index]
        assert stripe_account["webhook_endpoint_id"] == "stripe-test" and stripe_account["webhook_public_key"] is None
        assert stripe_account["webhook_secret"].startswith("whsec_") and stripe_account["api_key"].startswith("sk_test_")
        settings = demo["settings"]
        assert settings["recovery_lease_s"] == 12 and settings["abandonment_threshold_s"] == 2  # type: ignore[index]
        assert settings["lookup_backoff_s"] == [1, 2, 4, 8] and settings["key_window_s"] == 120  # type: ignore[index]

        ready = httpx.get(f"{demo['gateway_url']}/readyz", timeout=5)
        assert ready.status_code == 200, ready.text
        assert httpx.get(f"{demo['provider_url']}/_control/ledger", timeout=5).status_code == 200
        keys = httpx.get(f"{demo['gateway_url']}/v1/keys/certificates", timeout=5).json()["keys"]
        assert [(k["key_id"], k["active"]) for k in keys] == [("demo-1", True)]
        assert httpx.get(str(demo["merchant_sink_url"]), timeout=5).json() == {"messages": []}
        _pays_through_stripe(demo)

        created = subprocess.run(
            [sys.executable, "-m", "gateway.cli", "token", "create", "--role", "operator", "--subject", "op-e2e",
             "--data-dir", str(data_dir)], capture_output=True, text=True, env=_environment(), timeout=60)
        assert created.returncode == 0, created.stderr
        assert created.stdout.strip().startswith("pgt_")

        process.send_signal(signal.SIGINT)
        assert process.wait(STOP_TIMEOUT_S) == 0 or process.returncode in (130, -signal.SIGINT)
        psutil.wait_procs(children, timeout=10)
        survivors = [child for child in children if child.is_running() and child.status() != psutil.STATUS_ZOMBIE]
        assert survivors == [], f"left running: {[c.cmdline() for c in survivors]}"
        postgres.wait(10)
        assert not postgres.is_running()
        with pytest.raises(redis.ConnectionError):
            redis.Redis.from_url(broker_url, socket_connect_timeout=1).ping()
        with pytest.raises(httpx.ConnectError):
            httpx.get(f"{demo['gateway_url']}/healthz", timeout=2)
        assert not (data_dir / "paygate-demo.json").exists()
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(10)
        log.close()


def _pays_through_stripe(demo: dict[str, Any]) -> None:
    """An order created with ``provider_account`` ``stripe:acct_store:test`` pays through
    the fake's Stripe dialect, and its webhook is posted to ``/v1/webhooks/stripe-test`` with a
    ``Stripe-Signature`` the gateway verifies (204)."""
    gateway, tokens = str(demo["gateway_url"]), demo["tokens"]
    merchant, customer = ({"Authorization": f"Bearer {tokens[role]}"} for role in ("merchant", "customer"))
    created = httpx.post(f"{gateway}/v1/orders", headers=merchant, timeout=10, json={
        "order_id": "ORD-STRIPE-1", "customer_id": demo["customer_id"], "amount_minor": 4250, "currency": "EUR",
        "payment_method": "pm_card_visa", "provider_account": "stripe:acct_store:test"})
    assert created.status_code == 201, created.text
    paid = httpx.post(f"{gateway}/v1/orders/ORD-STRIPE-1/payment", headers=customer, timeout=30).json()
    assert paid["state"] == "Succeeded" and paid["provider_payment_id"].startswith("pi_"), paid
    control = str(demo["control_url"])
    sent = [r for r in httpx.get(f"{control}/requests", timeout=5).json()["requests"] if r["method"] == "POST"]
    assert [r["path"] for r in sent] == ["/stripe/v1/payment_intents"]
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        deliveries = [d for d in httpx.get(f"{control}/webhooks", timeout=5).json()["deliveries"]
                      if d["account"] == "stripe:acct_store:test" and d["type"] == "payment_intent.succeeded"]
        if deliveries and deliveries[0]["state"] == "delivered":
            break
        httpx.post(f"{control}/webhooks/deliver", timeout=10)
        time.sleep(0.5)
    else:
        raise AssertionError(f"the Stripe webhook was not delivered: {deliveries}")
    assert deliveries[0]["attempts"][-1]["status"] == 204, deliveries


def _dramatiq_parent(up: psutil.Process) -> psutil.Process | None:
    for child in up.children(recursive=True):
        try:
            if child.cmdline()[1:3] == ["-m", "dramatiq"] and child.ppid() == up.pid:
                return child
        except psutil.Error:
            continue
    return None


def test_paygate_up_restarts_a_worker_killed_with_sigkill_and_keeps_the_rest_running(work_dir: Path) -> None:
    """Make paygate up restart a process that dies (a log line says so), where honcho
    stopped the whole Procfile when one process exited."""
    log_path = work_dir / "up.log"
    log = log_path.open("wb")
    process, _, _ = _start_up(work_dir, log)
    try:
        demo = _wait_for(work_dir / "data" / "paygate-demo.json", process)
        up = psutil.Process(process.pid)
        worker = _dramatiq_parent(up)
        assert worker is not None
        web_pids = {c.pid for c in up.children() if "gateway.web" in c.cmdline()}
        worker.kill()

        # The supervisor says so before it restarts; until it has, a dramatiq process of the killed
        # worker's group may still be found, so wait for the line and a new worker together, and
        # for the new worker's own output under its name (it boots for a second or two after it
        # starts; the killed one may have been killed before it said anything).
        said = b"(pid %d) was killed by SIGKILL; restarting in 1 s" % worker.pid
        deadline = time.monotonic() + START_TIMEOUT_S
        restarted = None
        while restarted is None or restarted.pid == worker.pid or \
                b"worker     | " not in log_path.read_bytes().partition(said)[2]:
            assert time.monotonic() < deadline, "the worker was not restarted, or said nothing once restarted"
            assert process.poll() is None, "paygate up stopped when its worker died"
            time.sleep(0.2)
            restarted = _dramatiq_parent(up)
        assert {c.pid for c in up.children() if "gateway.web" in c.cmdline()} == web_pids
        assert httpx.get(f"{demo['gateway_url']}/readyz", timeout=5).status_code == 200

        children = up.children(recursive=True)
        process.send_signal(signal.SIGINT)
        assert process.wait(STOP_TIMEOUT_S) == 0
        psutil.wait_procs(children, timeout=10)
        assert [c for c in children if c.is_running() and c.status() != psutil.STATUS_ZOMBIE] == []
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(10)
        log.close()
