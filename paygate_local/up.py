"""``paygate up``: the whole system on one machine (API.md, Command line; DESIGN.md).

Starts the embedded PostgreSQL and Valkey unless ``DATABASE_URL`` / ``REDIS_URL`` are set,
migrates the schema (``gateway.store.migrate``), seeds the demo, runs the Procfile's processes plus
the demo sinks under the supervisor (``paygate_local.supervisor``: a process that dies is
restarted, with a back-off, so a tester can ``kill -9`` a worker and watch the work resume), waits
for ``/readyz`` to answer 200, then writes ``DIR/paygate-demo.json`` and prints the same in words.
SIGINT/SIGTERM stop every process, then every server it started.

However it ends, nothing of the run is left. The stop signals (SIGINT, SIGTERM and
SIGHUP, a closed terminal) are handled before anything starts: during start-up the first one
unwinds it (:class:`Stopped`), stopping what was started; once the processes run, it stops them.
It takes the data directory's lock, starts its guardian (``paygate_local.guardian``: when this
process dies, even by SIGKILL, it stops the servers from their pid files, and the children die
with the supervisor by themselves), stops what a previous run left in the directory, saying so,
and refuses to start while another process listens on the web or provider port, so it never
reports ready while an old web process answers.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from gateway.clock import SystemClock
from gateway.settings import load_settings
from gateway.store.db import Database
from gateway.store.migrate import migrate
from gateway.store.registry import register_provider_accounts
from gateway.store.schema import check_schema
from paygate_local import demo, rundir
from paygate_local.servers import EmbeddedPostgres, EmbeddedValkey, free_port, port_holder
from paygate_local.supervisor import PrefixedOutput, Supervisor
from paygate_local.terminal import say

READY_TIMEOUT_S = 90.0
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


class Stopped(Exception):
    """A stop signal arrived while ``paygate up`` was starting."""


class StopSignals:
    """SIGINT, SIGTERM and SIGHUP stop the run: the first sets :attr:`event` and, while
    :attr:`starting`, raises :class:`Stopped` where start-up is; later ones change nothing."""

    def __init__(self) -> None:
        self.event = threading.Event()
        self.starting = True
        self.during_start_up = ""  # " by SIGTERM during start-up", said in the last line
        for sig in STOP_SIGNALS:
            signal.signal(sig, self._handle)

    def _handle(self, signum: int, frame: object) -> None:
        if self.event.is_set():
            return
        self.event.set()
        if self.starting:
            self.during_start_up = f" by {signal.Signals(signum).name} during start-up"
            raise Stopped(self.during_start_up)


def processes(web_port: int, provider_port: int, sinks_port: int) -> dict[str, list[str]]:
    """The Procfile's processes (plus the demo sinks) as argument vectors for this Python."""
    py = sys.executable
    return {
        # uvicorn with uvloop, httptools and web_workers processes (gateway/web.py).
        "web": [py, "-m", "gateway.web", "--host", "127.0.0.1", "--port", str(web_port)],
        # Shuts down within the supervisor's 5 s grace: a pass cut short only leaves a lease to expire.
        "worker": [py, "-m", "dramatiq", "jobs", "--processes", "1", "--threads", "4",
                   "--worker-shutdown-timeout", "4000"],
        "clock": [py, "-m", "jobs.clock"],
        "provider": [py, "-m", "uvicorn", "provider_fake.app:app",
                     "--host", "127.0.0.1", "--port", str(provider_port), "--no-access-log"],
        "sinks": [py, "-m", "uvicorn", "--factory", "paygate_local.sinks:create_app",
                  "--host", "127.0.0.1", "--port", str(sinks_port), "--no-access-log"],
    }

@dataclass
class Servers:
    database_url: str
    redis_url: str
    postgres: EmbeddedPostgres | None = None
    valkey: EmbeddedValkey | None = None

    @classmethod
    def start(cls, data_dir: Path) -> Servers:
        postgres = valkey = None
        database_url = os.environ.get("DATABASE_URL")
        redis_url = os.environ.get("REDIS_URL")
        try:
            if not database_url:
                say("paygate: starting embedded PostgreSQL")
                postgres = EmbeddedPostgres(data_dir / "pg")
                database_url = postgres.url()
            if not redis_url:
                say("paygate: starting embedded Valkey")
                rundir.run_dir(data_dir).mkdir(parents=True, exist_ok=True)
                valkey = EmbeddedValkey(log_file=data_dir / "valkey.log", pid_file=rundir.valkey_pid_file(data_dir),
                                        detached=True)
                redis_url = valkey.url
        except BaseException:
            cls("", "", postgres, valkey).stop()
            raise
        return cls(database_url, redis_url, postgres, valkey)

    def stop(self) -> None:
        if self.valkey:
            self.valkey.stop()
        if self.postgres:
            self.postgres.stop()


def effective_settings(config_path: Path, servers: Servers) -> tuple[Any, dict[str, Any]]:
    env = {**os.environ, "PAYGATE_CONFIG": str(config_path),
           "DATABASE_URL": servers.database_url, "REDIS_URL": servers.redis_url}
    settings = load_settings(env)
    timings = settings.model_dump(exclude={"database_url", "redis_url", "token_pepper", "provider_accounts",
                                           "certificate_keys",
                                           "merchant_signing_secret", "merchant_sink_url", "alert_sink_url"})
    account = settings.provider_accounts[0].model_dump(
        exclude={"id", "base_url", "api_key", "webhook_secrets", "webhook_public_keys", "webhook_endpoint_id"})
    return settings, {**timings, **account}


async def prepare_database(settings: Any) -> dict[str, str]:
    clock = SystemClock()
    db = await Database.open(settings.database_url, size=2, name="paygate-up")
    try:
        await register_provider_accounts(db, clock, settings.provider_accounts)
        return await demo.seed(db, clock, settings.token_pepper.get_secret_value())
    finally:
        await db.close()


def _wait_ready(url: str, stop: threading.Event, on_ready: Any) -> None:
    deadline = time.monotonic() + READY_TIMEOUT_S
    while time.monotonic() < deadline and not stop.is_set():
        try:
            if httpx.get(f"{url}/readyz", timeout=1.0).status_code == 200:
                on_ready()
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.25)
    if not stop.is_set():
        say(f"paygate: {url}/readyz did not answer 200 within {READY_TIMEOUT_S:.0f} s; stopping")
        stop.set()


@dataclass(frozen=True)
class Prepared:
    """A configured, migrated, schema-checked, seeded system, ready for its processes to start."""

    settings: Any
    document: dict[str, Any]
    env: dict[str, str]  # what every process needs on top of os.environ


def prepare(data_dir: Path, servers: Servers, urls: demo.Urls, *, rehearsal: bool,
            tune: Callable[[dict[str, Any], dict[str, Any]], None] | None = None) -> Prepared:
    """Write the configuration (the demo's, changed in place by ``tune(gateway, cardco)``), run
    the schema's migrations and check it, register the accounts and seed the demo; what
    ``paygate up`` and ``paygate campaign`` share."""
    stored = demo.load_or_create_secrets(data_dir)
    config_path, cardco_path = data_dir / "paygate.json", data_dir / "cardco.json"
    gateway_config = demo.gateway_config(stored, urls, rehearsal=rehearsal)
    cardco_config = demo.cardco_config(stored, urls, rehearsal=rehearsal)
    if tune is not None:
        tune(gateway_config, cardco_config)
    demo.write_private_json(config_path, gateway_config)
    demo.write_private_json(cardco_path, cardco_config)
    demo.write_private_json(data_dir / "runtime.json", {
        "database_url": servers.database_url, "redis_url": servers.redis_url, "config": str(config_path)})
    settings, effective = effective_settings(config_path, servers)
    outcome = migrate(settings.database_url, SystemClock())
    for migration in (*outcome.adopted, *outcome.applied):
        say(f"paygate: schema migration {migration.label} "
            f"{'adopted' if migration in outcome.adopted else 'applied'}")
    drift = check_schema(settings.database_url)
    if drift:
        # Migrations bring every known version to schema.sql; what is left was changed by hand.
        say("paygate: warning: the database differs from schema.sql (changed by hand?):\n  " + "\n  ".join(drift))
    tokens = asyncio.run(prepare_database(settings))
    # The reference checkout page's backend (paygate_local.shop) holds these, never its browser.
    demo.write_private_json(data_dir / "shop.json", {
        "gateway_url": urls.gateway, "merchant_token": tokens["merchant"], "customer_token": tokens["customer"],
        "customer_id": demo.CUSTOMER_ID})
    env = {"DATABASE_URL": servers.database_url, "REDIS_URL": servers.redis_url,
           "PAYGATE_CONFIG": str(config_path), "CARDCO_CONFIG": str(cardco_path),
           "PAYGATE_SHOP_CONFIG": str(data_dir / "shop.json"),
           "PAYGATE_LOG_FORMAT": os.environ.get("PAYGATE_LOG_FORMAT", "console"),
           "PYTHONUNBUFFERED": "1"}
    return Prepared(settings, demo.demo_document(stored, urls, tokens, effective), env)


def run(data_dir: Path, web_port: int, provider_port: int, rehearsal: bool) -> int:
    signals = StopSignals()  # before anything starts
    try:
        return _run(signals, data_dir.resolve(), web_port, provider_port, rehearsal)
    except Stopped:
        return 1


def _run(signals: StopSignals, data_dir: Path, web_port: int, provider_port: int, rehearsal: bool) -> int:
    lock = guardian = None
    try:
        data_dir.mkdir(parents=True, exist_ok=True)
        lock = rundir.lock(data_dir)
        guardian = subprocess.Popen([sys.executable, "-m", "paygate_local.guardian", str(data_dir), str(os.getpid())],
                                    pass_fds=(lock,), start_new_session=True, stdin=subprocess.DEVNULL)
        rundir.stop_processes(data_dir, lambda name, pid: say(
            f"paygate: stopped a previous run's {name} (pid {pid}) left in {data_dir}"))
        for port in (web_port, provider_port):
            holder = port_holder(port)
            if holder is not None:
                say(f"paygate: port {port} is in use ({holder}); stop it or choose another port")
                return 1
        return _serve(signals, data_dir, web_port, provider_port, rehearsal)
    except rundir.Busy as busy:
        say(f"paygate: {busy}")
        return 1
    finally:
        signals.starting = False
        if guardian is not None:
            guardian.terminate()  # it stops whatever start-up left running, then lets go of the lock
            guardian.wait()
        if lock is not None:
            os.close(lock)
        say(f"paygate: stopped{signals.during_start_up}")


def _serve(signals: StopSignals, data_dir: Path, web_port: int, provider_port: int, rehearsal: bool) -> int:
    demo_file = data_dir / "paygate-demo.json"
    demo_file.unlink(missing_ok=True)
    servers = Servers.start(data_dir)
    try:
        sinks_port = free_port()
        urls = demo.Urls(gateway=f"http://127.0.0.1:{web_port}", provider=f"http://127.0.0.1:{provider_port}",
                         sinks=f"http://127.0.0.1:{sinks_port}")
        prepared = prepare(data_dir, servers, urls, rehearsal=rehearsal)
        document, env = prepared.document, prepared.env
        supervisor = Supervisor(PrefixedOutput(sys.stdout), pid_dir=rundir.processes_dir(data_dir))
        for name, argv in processes(web_port, provider_port, sinks_port).items():
            supervisor.add(name, argv, {**os.environ, **env})
        ready = threading.Event()

        def on_ready() -> None:
            demo.write_private_json(demo_file, document)
            say(describe(document, demo_file))
            ready.set()

        signals.starting = False  # from here a stop signal only sets the event the supervisor watches
        supervisor.start()
        threading.Thread(target=_wait_ready, args=(urls.gateway, signals.event, on_ready), daemon=True).start()
        supervisor.run(signals.event)
        return 0 if ready.is_set() else 1
    finally:
        signals.starting = False
        demo_file.unlink(missing_ok=True)
        servers.stop()


def describe(document: dict[str, Any], path: Path) -> str:
    """The demo document in words, for the terminal."""
    lines = [
        "", "paygate is up.",
        f"  gateway      {document['gateway_url']}   (console: {document['gateway_url']}/console/)",
        f"  CardCo fake  {document['provider_url']}   (control: {document['control_url']})",
        f"  sinks        merchant {document['merchant_sink_url']}   alerts {document['alert_sink_url']}",
        f"  demo shop    {document['shop_url']}   (the reference checkout page)",
        "  tokens:",
        *[f"    {role:<9} {token}" for role, token in document["tokens"].items()],
        f"  demo customer {document['customer_id']}, open order {document['demo_order_id']}, "
        f"tenant {document['tenant_id']}",
        *[f"  account {a['id']}: webhook endpoint /v1/webhooks/{a['webhook_endpoint_id']}"
          for a in document["provider_accounts"]],
        f"  CardCo's lists lag {document['settings']['visibility_delay_s']:g} s behind its writes "
        "(the fake's visibility_delay_s and the CardCo accounts')",
        f"  everything above, with secrets and timings: {path}",
        "  a process that dies is restarted; Ctrl-C stops every process and server.", "",
    ]
    return "\n".join(lines)
