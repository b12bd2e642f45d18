"""The seeded disruptions of one campaign and what they did.

Per wave, :meth:`Disruptions.rules` composes the CardCo rule set (the wave's per-object rules,
plus the lost payouts under listing lag the schedule puts in this wave, the lasting rules of
storms and lags still on, and a slow provider in a pause's wave) and :meth:`Disruptions.install`
installs it; :meth:`Disruptions.of_wave` gives the wave's disruptions to run with its load. Kills,
server restarts, crashes and outages run inside their wave, so a wave with an outage lasts as
long as the outage and server disruptions never overlap; a pause past a lease and a sink fault
run on in the background until their end (:meth:`Disruptions.finish` waits for them before the
settle); a storm or a lag lasts across waves until its end. The wall-clock window of every
server disruption is kept (``windows``): a 5xx the gateway answers inside one is expected. Once
a sink is back, the campaign's operator retries every dead-lettered row (docs/decisions/0004),
as after a real incident, having first noted which of them an open escalation names (what the
invariants judge them by); the rows that dead-lettered are counted (``dead-letters-retried:<kind>``).
Whatever a disruption, an install or the operator could not do is a failure of the run
(``failures``, judged with the invariants as the run's failed steps), never only a log line.
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from typing import Any

import httpx
import psycopg

from paygate_local.campaign import faults, pauses, schedule
from paygate_local.campaign.client import Gateway
from paygate_local.campaign.fleet import WORKERS, Fleet
from paygate_local.campaign.load import Payout
from paygate_local.campaign.sinkfaults import Mode

SINK_MODES: dict[str, Mode] = {"sink-error": "error", "sink-hang": "hang", "sink-down": "down"}
SINK_NAMES = {schedule.MERCHANT: "merchant", schedule.ALERTS: "alert"}
LAGGED_PER_WAVE = 2
# A lost payout's lag rules stay installed this much longer than the lag: its create may come
# late in its wave (the grant, the outbox, the broker), and the lag counts from the create.
LAG_MARGIN_S = 60.0


@dataclass
class Lasting:
    """Rules installed with every wave until ``until`` (monotonic seconds)."""

    until: float
    rules: list[faults.Rule]
    started: float = field(default_factory=time.monotonic)


# A scheduled pause that found no lease to catch looks again, at most this many rounds in all.
PAUSE_ROUNDS = 3


@dataclass
class Disruptions:
    plan: list[schedule.Disruption]
    fleet: Fleet
    gateway: Gateway
    progress: Callable[[str], None]
    pauses: Counter[str] = field(default_factory=Counter)
    notes: Counter[str] = field(default_factory=Counter)
    failures: list[str] = field(default_factory=list)
    # The wall-clock windows of server restarts, crashes and outages: a 5xx inside one is expected.
    windows: list[tuple[float, float]] = field(default_factory=list)
    # Each time the operator retried dead letters: the dead letters and the open escalations it found.
    dead_letter_rounds: list[tuple[list[dict[str, Any]], list[dict[str, Any]]]] = field(default_factory=list)
    _lasting: list[Lasting] = field(default_factory=list)
    _storms: list[Lasting] = field(default_factory=list)
    _storm_s: float = 0.0
    _background: list[asyncio.Task[None]] = field(default_factory=list)
    _sink_locks: dict[str, asyncio.Lock] = field(default_factory=dict)
    _pausing: asyncio.Lock = field(default_factory=asyncio.Lock)

    def _in(self, wave: int, action: schedule.Action) -> list[schedule.Disruption]:
        return [d for d in self.plan if d.wave == wave and d.action == action]

    # -- CardCo's rules --------------------------------------------------------------------------

    def rules(self, wave: int, objects: list[faults.Rule], wave_payouts: list[Payout]) -> list[faults.Rule]:
        """The wave's rule set, first rule first (the first applicable rule of a request wins):
        the lost payouts under lag, the lasting rules, the objects' rules, a pause's slow provider."""
        now = time.monotonic()
        first: list[faults.Rule] = []
        if self._in(wave, "payout-lag"):
            lag_s = faults.listing_lag_edge_s(self.fleet.document["settings"])
            lost = [p for p in wave_payouts if p.release_in_s == 0 and p.kind != "recall"][:LAGGED_PER_WAVE]
            for payout in lost:
                once, lasting = faults.lost_payout_under_lag(payout.reference, lag_s)
                first += once
                self._lasting.append(Lasting(now + lag_s + LAG_MARGIN_S, lasting))
            self.notes["payouts-lost-under-lag"] += len(lost)
            self.progress(f"wave {wave + 1}: {len(lost)} payout answers lost under a {lag_s:.0f} s listing lag")
        for storm in self._in(wave, "lookup-storm"):
            raging = Lasting(now + storm.duration_s, faults.storm())
            self._lasting.append(raging)
            self._storms.append(raging)
            self.progress(f"wave {wave + 1}: a {storm.duration_s:.0f} s storm of 429s on every lookup begins")
        self._end_lasting(now, every=False)
        slow = faults.slow_provider() if self._in(wave, "pause-worker") else []
        return first + [rule for lasting in self._lasting for rule in lasting.rules] + objects + slow

    def _end_lasting(self, now: float, *, every: bool) -> None:
        """Drop the lasting rules past their end (``every``: all of them); a storm lasted until now."""
        ended = [lasting for lasting in self._lasting if every or lasting.until <= now]
        self._storm_s += sum(now - lasting.started for lasting in ended if lasting in self._storms)
        self._lasting = [lasting for lasting in self._lasting if lasting not in ended]

    async def install(self, cardco: httpx.AsyncClient, control_url: str, rules: list[faults.Rule],
                      wave: int | None) -> None:
        """``POST /_control/faults``; a refusal or no answer is a failure of the run."""
        where = f"wave {wave + 1}" if wave is not None else "after the last wave"
        try:
            response = await cardco.post(f"{control_url}/faults", json={"rules": rules})
        except httpx.HTTPError as error:
            self.failures.append(f"{where}: installing {len(rules)} fault rules: {type(error).__name__}: {error}")
            return
        if response.status_code != 200:
            self.failures.append(f"{where}: CardCo refused {len(rules)} fault rules: HTTP {response.status_code} "
                                 f"{response.text[:300]}")

    # -- disruptions -----------------------------------------------------------------------------

    def of_wave(self, wave: int) -> list[Coroutine[Any, Any, None]]:
        """The wave's disruptions, to run with its load (a sink fault starts its background task)."""
        return [self._guarded(d) for d in self.plan if d.wave == wave
                and d.action not in ("payout-lag", "lookup-storm")]

    async def _guarded(self, d: schedule.Disruption) -> None:
        try:
            await asyncio.sleep(d.delay_s)
            await self._disrupt(d)
        except Exception as error:  # noqa: BLE001 - recorded as the run's failure, not swallowed
            self.failures.append(f"{d.action} in wave {d.wave + 1}: {type(error).__name__}: {error}")
            self.progress(f"disruption failed: {d.action}: {type(error).__name__}: {error}")

    async def _disrupt(self, d: schedule.Disruption) -> None:
        fleet, progress = self.fleet, self.progress
        if d.action == "kill-web":
            loop = asyncio.get_running_loop()
            deadline = loop.time() + 5.0
            while not self.gateway.busy(d.target) and loop.time() < deadline:
                await asyncio.sleep(0.005)
            busy = self.gateway.busy(d.target)
            fleet.kill("web", d.target)
            progress(f"SIGKILL web.{d.target} ({'mid-request' if busy else 'idle'})")
        elif d.action == "kill-worker":
            fleet.kill("worker", d.target)
            progress(f"SIGKILL worker.{d.target}")
        elif d.action == "kill-workers":
            for index in range(1, WORKERS + 1):
                fleet.kill("worker", index)
            progress("SIGKILL both workers at once")
        elif d.action == "kill-clock":
            fleet.kill("clock")
            progress("SIGKILL clock")
        elif d.action == "pause-worker":
            self._background.append(asyncio.create_task(self._pause(d)))
        elif d.action in SINK_MODES:
            self._background.append(asyncio.create_task(self._sink_fault(d)))
        else:
            await self._server(d)

    async def _server(self, d: schedule.Disruption) -> None:
        server = "postgres" if d.action.endswith("postgres") else "broker"
        crash, down_s = d.action == "crash-postgres", d.duration_s
        how = {"restart-postgres": "fast shutdown, start", "crash-postgres": "-m immediate, crash recovery",
               "outage-postgres": f"fast shutdown, down {down_s:.0f} s", "restart-broker": "SIGKILL, data lost",
               "outage-broker": f"SIGKILL, data lost, down {down_s:.0f} s"}[d.action]
        async with self._pausing:  # a pause of an earlier wave still running ends first (it reads PostgreSQL)
            self.progress(f"{d.action}: {server} ({how})")
            began = time.time()
            try:
                restarted = await asyncio.to_thread(self.fleet.restart, server, crash=crash, down_s=down_s)
            finally:
                self.windows.append((began, time.time()))
        self.progress(f"{server} is back" if restarted else f"{server} is not the campaign's: not restarted")

    async def _pause(self, d: schedule.Disruption) -> None:
        """A pause runs on past its wave; a server disruption of a later wave waits for it to end.
        A server that fails under it anyway ends it early (the worker is continued), which is
        noted, not a failure. A pause whose whole wait found no lease to catch (a quiet moment of
        the load) looks again, up to ``PAUSE_ROUNDS`` times, so a scheduled pause past a lease is
        not lost to timing (seed 000 "lease epochs" is what it exercises)."""
        fleet = self.fleet
        try:
            async with self._pausing:  # one at a time: a second stopped worker would leave nobody to take over
                for round_ in range(PAUSE_ROUNDS):
                    outcome = await pauses.pause_past_lease(
                        fleet.database_url, d.target, d.duration_s, stop=fleet.pause, resume=fleet.resume,
                        worker_of=fleet.worker_of, clock=time.monotonic, sleep=asyncio.sleep)
                    if sum(outcome.lapsed.values()) or round_ == PAUSE_ROUNDS - 1:
                        break
                    self.notes["pause-rounds-that-found-no-lease"] += 1
        except psycopg.OperationalError as error:
            self.notes["pauses-cut-short-by-an-outage"] += 1
            self.progress(f"pause in wave {d.wave + 1} cut short: {type(error).__name__}; SIGCONT")
            return
        except Exception as error:  # noqa: BLE001 - recorded as the run's failure, not swallowed
            self.failures.append(f"{d.action} in wave {d.wave + 1}: {type(error).__name__}: {error}")
            return
        name = f"worker.{outcome.worker}"
        lapsed = sum(outcome.lapsed.values())
        if lapsed:
            self.pauses[name] += 1
        else:
            self.notes["pauses-without-a-lapsed-lease"] += 1
        self.notes.update({f"pause-lapsed-lease:{kind}": n for kind, n in outcome.lapsed.items()})
        self.notes["pause-leases-taken-over"] += outcome.taken_over
        self.notes["pause-stops-continued-at-once-having-caught-no-lease"] += outcome.misses
        self.notes["pause-sessions-blocked-by-its-transaction"] += outcome.blocked
        self.progress(f"SIGSTOP {name} for {outcome.stopped_s:.1f} s: {lapsed} leases lapsed "
                      f"({dict(outcome.lapsed)}), {outcome.taken_over} taken over "
                      f"(not: {', '.join(outcome.not_taken_over) or 'none'}), {outcome.blocked} sessions "
                      f"blocked by its open transaction; SIGCONT (after {outcome.misses} stops that caught no "
                      "lease of the stopped worker's)")

    async def _sink_fault(self, d: schedule.Disruption) -> None:
        name, mode = SINK_NAMES[d.target], SINK_MODES[d.action]
        link = self.fleet.sinks[name]
        async with self._sink_locks.setdefault(name, asyncio.Lock()):
            try:
                link.set(mode)
                self.progress(f"{name} sink: {mode} for {d.duration_s:.0f} s")
                await asyncio.sleep(d.duration_s)
            except Exception as error:  # noqa: BLE001 - recorded as the run's failure, not swallowed
                self.failures.append(f"{d.action} in wave {d.wave + 1}: {type(error).__name__}: {error}")
            finally:
                link.set("ok")
                self.progress(f"{name} sink: ok again")
        await self.retry_dead_letters()

    async def retry_dead_letters(self) -> None:
        """The operator's part once a sink is back (docs/decisions/0004): every dead-lettered row
        is retried (``POST /v1/ops/outbox/{id}/retry``), which also resolves its escalation. What
        the operator found first, the dead letters and the open escalations, is kept
        (``dead_letter_rounds``): the invariants judge each dead letter as it stood before its retry."""
        dead = await self._every("/v1/ops/outbox?state=dead", "listing dead letters")
        if not dead:  # none, or the listing failed (a failure of the run)
            return
        episodes = await self._every("/v1/ops/escalations?state=all", "listing escalations")
        if episodes is None:
            return
        self.dead_letter_rounds.append((dead, [e for e in episodes if e["resolved_at"] is None]))
        for row in dead:
            response = await self.gateway.call("POST", f"/v1/ops/outbox/{row['message_id']}/retry", "operator")
            if response is None or response.status_code != 200:
                self.failures.append(f"retrying dead letter {row['message_id']}: "
                                     f"{response.status_code if response else 'no answer'}")
                continue
            self.notes[f"dead-letters-retried:{row['kind']}"] += 1

    async def _every(self, path: str | None, what: str) -> list[dict[str, Any]] | None:
        """Every page of an operator's list, or None (a failure of the run) if one was refused."""
        found: list[dict[str, Any]] = []
        while path is not None:
            response = await self.gateway.call("GET", path, "operator")
            if response is None or response.status_code != 200:
                self.failures.append(f"{what}: {response.status_code if response else 'no answer'}")
                return None
            found += response.json()
            path = response.links.get("next", {}).get("url")
        return found

    async def finish(self) -> None:
        """After the last wave: every sink fault over, every lasting rule ended (the caller
        installs the empty set next)."""
        await asyncio.gather(*self._background)
        self._end_lasting(time.monotonic(), every=True)
        await self.retry_dead_letters()

    # -- the record ------------------------------------------------------------------------------

    def outages(self) -> dict[str, Any]:
        """``{"postgres": {"restarts", "crashes", "down_s"}, "broker": {"restarts", "down_s"},
        "sinks": {"merchant": {...}, "alert": {...}}, "provider": {"lookup_storms", "storm_s"}}``."""
        postgres, broker = self.fleet.outages["postgres"], self.fleet.outages["broker"]
        return {
            "postgres": {"restarts": postgres.restarts, "crashes": postgres.crashes,
                         "down_s": round(postgres.down_s, 1)},
            "broker": {"restarts": broker.restarts, "down_s": round(broker.down_s, 1)},
            "sinks": {name: link.record() for name, link in self.fleet.sinks.items()},
            "provider": {"lookup_storms": len(self._storms), "storm_s": round(self._storm_s, 1)},
        }
