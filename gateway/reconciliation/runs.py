"""Provider-side reconciliation runs (docs/decisions/0071): page through everything one provider
account created in a window, match each object to an attempt, classify it
(gateway.domain.reconciliation) and act: ``evidence`` is written by the writer of its kind under
the one evidence rule (a checkout payment through :meth:`Attempts.apply_evidence`, a pipeline kind
through its :class:`Reconciler`, exactly as a lookup's record), ``orphan``, ``disagreement`` and
``missing`` are escalated ``provider-orphan``, ``provider-disagreement``, ``provider-missing`` with
the object's ``provider_object_id``; nothing but reads is ever sent to the provider.

A run keeps its position (the kind being listed, the cursor after the last committed page) in its
row: each page's findings, their escalations and evidence, and the next position commit in one
transaction under the run's row lock, so a run killed half-way resumes after its last committed
page and a page read twice is written once. A finding is recorded once per run and object, and
escalated only by the first run that found it (re-running a window raises nothing again).

Each page read takes one token of the account's lookup bucket (gateway.ratelimits), and only
from above :data:`RESERVE_SHARE` of its burst: the tokens recovery's lookups need stay in the
bucket. A run out of tokens, paused by a 429 or given an unreadable page stops where it is and
is continued later (:meth:`Runs.execute` says ``waiting``); once every kind is listed, the
Succeeded attempts the provider did not list are the run's ``missing`` findings, and it finishes.
"""

from __future__ import annotations

import math
import uuid
from collections import Counter
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

import httpx
from psycopg import sql
from psycopg.types.json import Jsonb

from gateway import instruments
from gateway.clock import Clock
from gateway.domain.attempt_kinds import KINDS, Kind
from gateway.domain.attempts import Evidence, seen
from gateway.domain.evidence_rule import Seen
from gateway.domain.outcomes import AttemptState
from gateway.domain.paging import Keyset, PageRequest
from gateway.domain.provider_evidence import PaymentObject, object_evidence
from gateway.domain.provider_listing import Listed, Unreadable
from gateway.domain.reconciliation import (
    CLASSES,
    ESCALATED,
    FindingClass,
    escalation_key,
    finding,
    missing_before,
    scheduled_window,
)
from gateway.escalations.store import raise_escalation
from gateway.payments.attempts import Attempts, facts
from gateway.payouts.attempts import PAYOUT
from gateway.payouts.recalls import RECALL
from gateway.pipeline.reconciler import Reconciler
from gateway.providers import provider_for
from gateway.providers.calls import ProviderCalls, RateLimited
from gateway.ratelimits.buckets import LookupTokens
from gateway.refunds.attempts import REFUND
from gateway.settings import ProviderAccount, Settings
from gateway.store.db import Connection, Database, fetch_all, fetch_one
from gateway.store.keyset import directed, page_params
from gateway.store.per_kind import per_kind
from gateway.store.queries import load_queries

_SQL = load_queries("gateway.reconciliation", "runs.sql")


def unlisted_succeeded(kinds: tuple[Kind, ...]) -> sql.Composed:
    """The Succeeded attempts of ``kinds`` a run did not see listed (runs.sql ``unlisted_succeeded``)."""
    return sql.SQL(_SQL["unlisted_succeeded"]).format(attempts_by_kind=per_kind(_SQL["kind_attempts"], kinds))


UNLISTED_SUCCEEDED = unlisted_succeeded(KINDS)

ACTOR = "provider-reconciliation"
KEYSET = Keyset("reconciliation-runs", "requested_at", "run_id", uuid.UUID)
_LIST = directed(_SQL["list_runs"])
FINDINGS_SHOWN = 1000
RUNS_PER_WAKE = 20
RESERVE_SHARE = 0.5  # of the account's lookup burst, left in the bucket for recovery's lookups
Row = dict[str, Any]
Progress = Literal["finished", "failed", "waiting"]


@dataclass(frozen=True)
class Match:
    """The attempt a listed object names (None: none), and what the object establishes about it."""

    attempt: Row | None
    state: AttemptState | None
    recorded_id: str | None
    seen: Seen | None


def listing_lag_s(account: ProviderAccount) -> float:
    """How long the account's provider may hide a new object from a listing: the account's
    ``visibility_delay_s``, else its provider's documented delay."""
    documented = provider_for(account.id).timings.visibility_delay_s
    return documented if account.visibility_delay_s is None else account.visibility_delay_s


class Runs:
    def __init__(self, db: Database, clock: Clock, settings: Settings, http: httpx.AsyncClient) -> None:
        self._db = db
        self._clock = clock
        self._settings = settings
        self._http = http
        self._tokens = LookupTokens(db, clock, settings)
        self._attempts = Attempts(db, clock, settings)
        self._reconcilers = {kind.name: Reconciler(kind, db, clock, settings, http)
                             for kind in (PAYOUT, RECALL, REFUND)}

    async def start(self, provider_account: str, window_from: datetime, window_to: datetime,
                    started_by: str) -> Row:
        """A new Running run; the caller enqueues its execution."""
        run = await self._db.fetch_one(_SQL["insert_run"], {
            "run_id": uuid.uuid4(), "provider_account": provider_account, "window_from": window_from,
            "window_to": window_to, "started_by": started_by, "now": self._clock.now()})
        assert run is not None
        return run

    async def get(self, run_id: uuid.UUID) -> Row | None:
        return await self._db.fetch_one(_SQL["get_run"], {"run_id": run_id})

    async def page(self, page: PageRequest, *, provider_account: str | None = None,
                   state: str | None = None) -> list[Row]:
        """A page of runs by :data:`KEYSET`, optionally of one account or in one state."""
        return await self._db.fetch_all(_LIST[page.order], {"provider_account": provider_account, "state": state,
                                                            **page_params(page)})

    async def findings(self, run_id: uuid.UUID, limit: int = FINDINGS_SHOWN) -> list[Row]:
        """The run's findings other than matched, in the order found (at most ``limit``)."""
        return await self._db.fetch_all(_SQL["findings_of_run"], {"run_id": run_id, "limit": limit})

    async def schedule(self) -> list[Row]:
        """The clock's runs: one per configured account once ``reconciliation_interval_s`` has
        passed since its last scheduled run, over that interval plus the overlap before it."""
        started = []
        now = self._clock.now()
        interval_s = self._settings.reconciliation_interval_s
        window_from, _ = scheduled_window(now, interval_s, self._settings.reconciliation_overlap_s)
        for account in self._settings.provider_accounts:
            async with self._db.transaction() as conn:
                await conn.execute(_SQL["lock_schedule"], {"provider_account": account.id})
                run = await fetch_one(conn, _SQL["start_scheduled"], {
                    "run_id": uuid.uuid4(), "provider_account": account.id, "window_from": window_from,
                    "now": now, "interval_s": interval_s})
            if run is not None:
                started.append(run)
        return started

    async def continue_running(self, max_pages: int) -> dict[uuid.UUID, Progress]:
        """Every Running run continued for at most ``max_pages`` pages each, oldest first."""
        rows = await self._db.fetch_all(_SQL["running_runs"], {"limit": RUNS_PER_WAKE})
        return {row["run_id"]: await self.execute(row["run_id"], max_pages) for row in rows}

    async def execute(self, run_id: uuid.UUID, max_pages: int | None = None) -> Progress:
        """Page the run on from where it stands until it finishes, fails, or must wait (no token,
        a 429, an unreadable page; ``max_pages`` read, for tests that stop a run half-way)."""
        pages = 0
        while True:
            run = await self.get(run_id)
            if run is None or run["state"] != "Running":
                return "failed" if run is None or run["state"] == "Failed" else "finished"
            account = self._settings.account(run["provider_account"])
            if account is None:
                await self._finish(run_id, "Failed", "account-not-configured")
                return "failed"
            if run["listed"]:
                await self._missing(run, account)
                return "finished"
            if max_pages is not None and pages >= max_pages:
                return "waiting"
            if not await self._page(run, account):
                return "waiting"
            pages += 1

    async def _page(self, run: Row, account: ProviderAccount) -> bool:
        """Read and write the run's next page; False when it could not be read now."""
        kinds = provider_for(account.id).listed_kinds
        kind = kinds[run["kind_position"]]
        reserve = math.ceil(self._settings.lookup_limit(account)[1] * RESERVE_SHARE)
        if not await self._tokens.take(account, 1, reserve):
            return False
        calls = ProviderCalls(account, self._clock, self._http, self._settings.token_pepper.get_secret_value(),
                              kind=kind)
        try:
            page = await calls.list_page(kind, run["window_from"], run["window_to"], run["page_cursor"])
        except RateLimited as limited:
            await self._tokens.pause(account.id, limited.retry_after_s or account.lookup_backoff_s[0],
                                     "provider.rate-limited")
            return False
        if isinstance(page, Unreadable):
            return False
        async with self._db.transaction() as conn:
            current = await fetch_one(conn, _SQL["lock_run"], {"run_id": run["run_id"]})
            if current is None or current["state"] != "Running" or (
                    current["kind_position"], current["page_cursor"]) != (run["kind_position"], run["page_cursor"]):
                return True  # another executor wrote this page first
            counts: Counter[str] = Counter()
            inside = [obj for obj in page.objects if run["window_from"] <= obj.created_at < run["window_to"]]
            for obj in inside:
                found = await self._object(conn, run, account, obj)
                if found is not None:
                    counts[found] += 1
            position = run["kind_position"] + (0 if page.cursor else 1)
            advanced: dict[str, Any] = {
                "run_id": run["run_id"], "kind_position": position, "page_cursor": page.cursor,
                "listed": position >= len(kinds), "objects_read": len(inside),
                **{name: counts[name] for name in CLASSES}}
            await conn.execute(_SQL["advance"], advanced)
        instruments.count(instruments.RECONCILIATION_OBJECTS_READ, len(inside), kind=kind)
        _count_findings(counts)
        return True

    async def _object(self, conn: Connection, run: Row, account: ProviderAccount, obj: Listed) -> str | None:
        """Match, classify and act on one listed object; its class, or None when this run had
        already recorded it."""
        now = self._clock.now()
        match = await (self._payment(conn, account, obj) if obj.kind == "payment"
                       else self._pipeline(conn, account, obj))
        found = finding(match.state, match.recorded_id, match.seen)
        attempt_id = match.attempt["attempt_id"] if match.attempt else None
        details = {"provider_object_id": obj.id, "kind": obj.kind, "amount_minor": obj.amount_minor,
                   "currency": obj.currency, "client_reference": obj.client_reference, "status": obj.status,
                   "created_at": obj.created_at.isoformat(),
                   "attempt_state": match.state.value if match.state else None}
        if not await self._record(conn, run, obj.kind, obj.id, found, attempt_id, details, now):
            return None
        if found == "evidence" and match.attempt is not None:
            await self._evidence(conn, now, account, obj, match.attempt)
        return found

    async def _payment(self, conn: Connection, account: ProviderAccount, obj: Listed) -> Match:
        by_id = await fetch_one(conn, _SQL["payment_by_provider_id"],
                                {"provider_account": account.id, "provider_id": obj.id})
        by_reference = None if obj.client_reference is None else await fetch_one(
            conn, _SQL["payment_by_reference"],
            {"provider_account": account.id, "client_reference": obj.client_reference})
        attempt = by_id or by_reference
        if attempt is None:
            return Match(None, None, None, None)
        state = AttemptState(attempt["state"])
        if by_id is not None and by_reference is not None and by_id["attempt_id"] != by_reference["attempt_id"]:
            return Match(attempt, state, attempt["provider_payment_id"], None)
        return Match(attempt, state, attempt["provider_payment_id"],
                     seen(facts(attempt), self._payment_evidence(account, obj), only_send=False))

    async def _pipeline(self, conn: Connection, account: ProviderAccount, obj: Listed) -> Match:
        reconciler = self._reconcilers[obj.kind]
        rows = reconciler.kind.rows
        by_reference, by_id = await rows.lock_attempt(conn, account.id, client_reference=obj.client_reference,
                                                      provider_id=obj.id)
        attempt = by_id or by_reference
        if attempt is None:
            return Match(None, None, None, None)
        state = AttemptState(attempt["state"])
        if by_id is not None and by_reference is not None and by_id["attempt_id"] != by_reference["attempt_id"]:
            return Match(attempt, state, attempt[rows.provider_id], None)
        return Match(attempt, state, attempt[rows.provider_id], reconciler.seen(attempt, obj.record))

    def _payment_evidence(self, account: ProviderAccount, obj: Listed) -> Evidence:
        return object_evidence(account.id, PaymentObject.model_validate(obj.record), source="reconciliation-run")

    async def _evidence(self, conn: Connection, now: datetime, account: ProviderAccount, obj: Listed,
                        attempt: Row) -> None:
        """Apply the object to the attempt it resolves, through the writer of its kind."""
        if obj.kind == "payment":
            await self._attempts.apply_evidence(attempt["attempt_id"], self._payment_evidence(account, obj),
                                                actor=ACTOR, kind="lookup", conn=conn)
        else:
            await self._reconcilers[obj.kind].apply_listed(conn, now, attempt, obj.record)

    async def _record(self, conn: Connection, run: Row, kind: str, object_id: str, found: FindingClass,
                      attempt_id: Any, details: dict[str, Any], now: datetime) -> bool:
        """Record the finding once per run and object, and escalate it if it is a person's and no
        earlier run found it; False when this run had recorded it already."""
        keys = {"run_id": run["run_id"], "provider_account": run["provider_account"], "kind": kind,
                "provider_object_id": object_id, "class": found}
        inserted = await fetch_one(conn, _SQL["record_finding"], keys | {
            "attempt_id": attempt_id, "details": Jsonb(details), "now": now})
        if inserted is None:
            return False
        if found in ESCALATED:
            before = await fetch_one(conn, _SQL["found_before"], keys)
            if before is None or not before["found"]:
                await raise_escalation(
                    conn, escalation_key=escalation_key(run["provider_account"], kind, object_id, found),
                    reason=ESCALATED[found], now=now, reminder_interval_s=self._settings.reminder_interval_s,
                    attempt_id=attempt_id if kind == "payment" else None,
                    details=details | {"provider_account": run["provider_account"], "run_id": str(run["run_id"]),
                                       "attempt_id": str(attempt_id) if attempt_id else None})
        return True

    async def _missing(self, run: Row, account: ProviderAccount) -> None:
        """The Succeeded attempts whose objects the listing did not show, then the run finishes."""
        before = missing_before(run["window_to"], run["requested_at"], listing_lag_s(account))
        now = self._clock.now()
        async with self._db.transaction() as conn:
            current = await fetch_one(conn, _SQL["lock_run"], {"run_id": run["run_id"]})
            if current is None or current["state"] != "Running":
                return
            unlisted = await fetch_all(conn, UNLISTED_SUCCEEDED, {
                "run_id": run["run_id"], "provider_account": account.id, "window_from": run["window_from"],
                "before": before, "kinds": list(provider_for(account.id).listed_kinds)})
            missing = 0
            for attempt in unlisted:
                object_id = attempt["provider_id"] or attempt["client_reference"]
                details = {"provider_object_id": object_id, "kind": attempt["kind"],
                           "amount_minor": attempt["amount_minor"], "currency": attempt["currency"],
                           "client_reference": attempt["client_reference"], "attempt_state": "Succeeded",
                           "sent_at": attempt["sent_at"].isoformat()}
                if await self._record(conn, run, attempt["kind"], object_id, "missing", attempt["attempt_id"],
                                      details, now):
                    missing += 1
            listed: dict[str, Any] = {
                "run_id": run["run_id"], "kind_position": current["kind_position"], "page_cursor": None,
                "listed": True, "objects_read": 0, **dict.fromkeys(CLASSES, 0), "missing": missing}
            await conn.execute(_SQL["advance"], listed)
            finished = await fetch_one(conn, _SQL["finish"], {"run_id": run["run_id"], "state": "Finished",
                                                              "failure": None, "now": now})
        _count_findings(Counter(missing=missing))
        if finished is not None:
            instruments.count(instruments.RECONCILIATION_RUNS, outcome="finished")

    async def _finish(self, run_id: uuid.UUID, state: str, failure: str | None) -> None:
        ended = await self._db.fetch_one(_SQL["finish"], {"run_id": run_id, "state": state, "failure": failure,
                                                          "now": self._clock.now()})
        if ended is not None:
            instruments.count(instruments.RECONCILIATION_RUNS, outcome=state.lower())


def _count_findings(counts: Counter[str]) -> None:
    for name, found in counts.items():
        if found:
            instruments.count(instruments.RECONCILIATION_FINDINGS, found, **{"class": name})


async def last_finished(db: Database, accounts: list[str]) -> dict[str, datetime]:
    """Per account: when its last run finished, else when it was registered (the age a
    never-finished account's alert counts from)."""
    rows = await db.fetch_all(_SQL["last_finished"], {"accounts": accounts})
    return {row["provider_account"]: row["since"] for row in rows}
