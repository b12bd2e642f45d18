"""The fleet a campaign runs against: PostgreSQL and Valkey (embedded, or ``DATABASE_URL`` /
``REDIS_URL``), and the Procfile's processes under the supervisor: CardCo, two web processes on
two ports, two workers, one clock, plus the demo sinks, which the gateway reaches
through one :class:`paygate_local.campaign.sinkfaults.SinkLink` each, so the campaign can make them fail.

Timings are ``paygate up --rehearsal``'s, shortened where the settle waits on them (a 60 s key
window with a 30 s margin, so an unanswerable attempt is escalated 30 s after its first send; a
10 s payout send deadline and 5 s of provider skew). CardCo's two accounts deliver their webhooks
to different web processes, so killing either one loses deliveries that CardCo must retry.
Outbox deliveries get a 3 s budget, so a hanging sink costs its row 3 s an attempt, and the
rehearsal's 5 failures with 1, 2, 4, 4 s of back-off dead-letter a row a sink refuses for ~12 s.
Process output goes to ``DIR/logs/<name>.log``; supervisor events also to the progress lines.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from paygate_local import demo
from paygate_local.campaign.sinkfaults import SinkLink
from paygate_local.servers import free_port
from paygate_local.supervisor import Supervisor
from paygate_local.up import Prepared, Servers, prepare, processes

READY_TIMEOUT_S = 90.0
GATEWAY_TIMINGS = {"recovery_lease_s": 12, "payout_send_deadline_s": 10, "provider_skew_s": 5,
                   "readonly_cadence_s": 5, "outbox_delivery_budget_s": 3, "outbox_backoff_max_s": 4}
ACCOUNT_TIMINGS = {"key_window_s": 60, "escalation_safety_margin_s": 30}
CARDCO_TIMINGS = {"request_expiry_skew_s": 5, "requires_action_expires_in_s": 5, "processing_complete_after_s": 2,
                  "webhook_retry_schedule_s": [1, 2, 4, 8, 8]}
WORKERS = 2
WEBS = 2


class LogFiles:
    """Each process's lines to ``logs/<name>.log`` (kept across its restarts); supervisor events
    to ``logs/supervisor.log`` and to ``announce``."""

    def __init__(self, folder: Path, announce: Callable[[str], None]) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        self._folder = folder
        self._files: dict[str, Any] = {}
        self._announce = announce
        self._lock = threading.Lock()

    def _file(self, name: str) -> Any:
        if name not in self._files:
            self._files[name] = (self._folder / f"{name}.log").open("a", buffering=1)
        return self._files[name]

    def line(self, name: str, text: str) -> None:
        with self._lock:
            self._file(name).write(text + "\n")

    def event(self, text: str) -> None:
        with self._lock:
            self._file("supervisor").write(f"{time.strftime('%H:%M:%S')} {text}\n")
        self._announce(text)

    def close(self) -> None:
        with self._lock:
            for handle in self._files.values():
                handle.close()
            self._files.clear()


def _tune(web_urls: list[str], sinks: dict[str, SinkLink]) -> Callable[[dict[str, Any], dict[str, Any]], None]:
    def tune(gateway: dict[str, Any], cardco: dict[str, Any]) -> None:
        gateway.update(GATEWAY_TIMINGS)
        gateway["merchant_sink_url"] = f"{sinks['merchant'].url}/merchant"
        gateway["alert_sink_url"] = f"{sinks['alert'].url}/alerts"
        for account in gateway["provider_accounts"]:
            account.update(ACCOUNT_TIMINGS)
        cardco.update(CARDCO_TIMINGS)
        for index, account in enumerate(cardco["accounts"]):
            endpoint = account["webhook_url"].rsplit("/v1/", 1)[1]
            account["webhook_url"] = f"{web_urls[index % len(web_urls)]}/v1/{endpoint}"
    return tune


@dataclass
class ServerOutages:
    """What one server went through: every stop-and-start, the crashes among them, and the
    seconds it did not answer (from the stop to the end of the start)."""

    restarts: int = 0
    crashes: int = 0
    down_s: float = 0.0


@dataclass
class Fleet:
    servers: Servers
    supervisor: Supervisor
    prepared: Prepared
    web_urls: list[str]
    logs: LogFiles
    sinks: dict[str, SinkLink]
    kills: Counter[str] = field(default_factory=Counter)
    restarts: Counter[str] = field(default_factory=Counter)
    outages: dict[str, ServerOutages] = field(default_factory=lambda: {"postgres": ServerOutages(),
                                                                       "broker": ServerOutages()})
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    @classmethod
    def start(cls, data_dir: Path, announce: Callable[[str], None]) -> Fleet:
        servers = Servers.start(data_dir)
        provider_port, sinks_port = free_port(), free_port()
        sinks = {"merchant": SinkLink(sinks_port), "alert": SinkLink(sinks_port)}
        try:
            for link in sinks.values():
                link.start()
            web_ports = [free_port() for _ in range(WEBS)]
            web_urls = [f"http://127.0.0.1:{port}" for port in web_ports]
            urls = demo.Urls(gateway=web_urls[0], provider=f"http://127.0.0.1:{provider_port}",
                             sinks=f"http://127.0.0.1:{sinks_port}")
            prepared = prepare(data_dir, servers, urls, rehearsal=True, tune=_tune(web_urls, sinks))
        except BaseException:
            for link in sinks.values():
                link.stop()
            servers.stop()
            raise
        logs = LogFiles(data_dir / "logs", announce)
        supervisor = Supervisor(logs)
        env = {**_inherited_environment(), **prepared.env, "PAYGATE_LOG_FORMAT": "json"}
        argv = processes(web_ports[0], provider_port, sinks_port)
        supervisor.add("provider", argv["provider"], env)
        supervisor.add("sinks", argv["sinks"], env)
        for index, port in enumerate(web_ports, start=1):
            supervisor.add(f"web.{index}", processes(port, provider_port, sinks_port)["web"], env)
        for index in range(1, WORKERS + 1):
            supervisor.add(f"worker.{index}", argv["worker"], env)
        supervisor.add("clock", argv["clock"], env)
        fleet = cls(servers, supervisor, prepared, web_urls, logs, sinks)
        supervisor.start()
        fleet._thread = threading.Thread(target=supervisor.run, args=(fleet._stop,), daemon=True)
        fleet._thread.start()
        try:
            fleet.wait_ready()
        except BaseException:
            fleet.stop()
            raise
        return fleet

    @property
    def document(self) -> dict[str, Any]:
        return self.prepared.document

    @property
    def database_url(self) -> str:
        return self.servers.database_url

    def wait_ready(self) -> None:
        urls = [f"{url}/readyz" for url in self.web_urls] + [
            f"{self.document['control_url']}/ledger", self.document["merchant_sink_url"]]
        deadline = time.monotonic() + READY_TIMEOUT_S
        for url in urls:
            while True:
                try:
                    if httpx.get(url, timeout=2.0).status_code == 200:
                        break
                except httpx.HTTPError:
                    pass
                if time.monotonic() > deadline:
                    raise RuntimeError(f"{url} did not answer 200 within {READY_TIMEOUT_S:.0f} s")
                time.sleep(0.25)

    def kill(self, role: str, index: int | None = None) -> int | None:
        """SIGKILL ``role`` (``worker``, ``web``, ``clock``); the supervisor restarts it."""
        name = role if index is None else f"{role}.{index}"
        pid = self.supervisor.kill(name)
        if pid is not None:
            self.kills[role] += 1
        return pid

    def pause(self, index: int) -> int | None:
        """SIGSTOP worker ``index``'s process group: the dramatiq parent and the forked worker
        that holds the leases (stopping the parent alone stops no child)."""
        return self.supervisor.kill(f"worker.{index}", signal.SIGSTOP)

    def resume(self, index: int) -> int | None:
        """SIGCONT worker ``index``'s process group."""
        return self.supervisor.kill(f"worker.{index}", signal.SIGCONT)

    def worker_of(self, pid: int) -> int | None:
        """Which worker (1-based) process ``pid`` belongs to (a forked worker is in its parent's
        process group), or None."""
        try:
            group = os.getpgid(pid)
        except OSError:
            return None
        return next((index for index in range(1, WORKERS + 1)
                     if self.supervisor.pid(f"worker.{index}") == group), None)

    def restart(self, server: str, *, crash: bool = False, down_s: float = 0.0) -> bool:
        """Stop ``postgres`` (fast shutdown; ``crash``: ``-m immediate``, so it starts through
        crash recovery) or the ``broker`` (SIGKILL, its data lost), leave it down ``down_s``
        more, start it again; False when the server came from ``DATABASE_URL`` / ``REDIS_URL``
        and is not the campaign's to restart."""
        postgres, valkey = self.servers.postgres, self.servers.valkey
        if server == "postgres" and postgres is not None:
            stop, start = (postgres.shut_down_immediately if crash else postgres.shut_down_fast), postgres.start
        elif server == "broker" and valkey is not None:
            stop, start = valkey.kill, valkey.start
        else:
            return False
        began = time.monotonic()
        try:
            stop()
            time.sleep(down_s)
        finally:
            start()  # also after a stop that failed: the server is never left down
        record = self.outages[server]
        record.restarts += 1
        record.crashes += crash
        record.down_s += time.monotonic() - began
        self.restarts[server] += 1
        return True

    def stop(self) -> None:
        for index in range(1, WORKERS + 1):
            self.resume(index)  # a stopped worker could not take its SIGTERM
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=30)
        self.supervisor.stop()
        for link in self.sinks.values():
            link.stop()
        self.servers.stop()
        self.logs.close()


def _inherited_environment() -> dict[str, str]:
    """The caller's environment without its ``PAYGATE_*`` settings: the campaign's timings win."""
    return {key: value for key, value in os.environ.items() if not key.startswith("PAYGATE_")}
