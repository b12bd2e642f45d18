"""Counters and histograms of events that leave no row behind (seed 000 section 21,
"Observability and Evidence"; docs/decisions/0040 names and labels, 0041 how they are counted).

Every family is declared here, in :data:`FAMILIES`, with its labels and the values each label may
take: a label value is an enumerated code, a kind name or a pattern-checked reason code, never an
id, account, token or free text; anything else is counted under ``other``. A process counts into
its own pending deltas (:func:`count`, :func:`observe`, :func:`provider_call`); the store flushes
them into PostgreSQL (``gateway.store.counters``), and ``/metrics`` reads the sums of every
process from there, so each web process reports the fleet's value and a restart loses nothing
that was flushed.
"""

from __future__ import annotations

import asyncio
import functools
import re
import threading
import time
from collections.abc import Awaitable, Mapping
from dataclasses import dataclass, field
from typing import Literal, Protocol, TypeVar

import httpx

from gateway.domain.attempt_kinds import KINDS, pipeline_kinds
from gateway.domain.provider_accounts import ACCOUNT_ID

OTHER = "other"
# A reason code is lowercase words joined by ".", "-" or "_" ("grant.expired", "payout-deadline"):
# no digits, so no id, uuid, reference or amount can pass for one.
_CODE = re.compile(r"^(?=.{1,64}$)[a-z]+(?:[._-][a-z]+)*$")
# The attempt pipeline's kinds (gateway.domain.attempt_kinds): the ``kind`` label of every
# paygate_payout_* family (docs/decisions/0040: recalls and refunds are kinds, not prefixes).
PIPELINE_KINDS = tuple(kind.name for kind in pipeline_kinds())
CALL_OUTCOMES = ("ok", "rejected", "rate_limited", "server_error", "timeout", "transport", "error")
LATENCY_BUCKETS = (0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)

Allowed = tuple[str, ...] | Literal["code", "account"]


@dataclass(frozen=True)
class Family:
    """One metric family: its exposed name, type, help and the values each label may take
    (a tuple; ``"code"``: any reason code matching ``_CODE``; ``"account"``: a provider account id,
    configuration and so a bounded set, docs/decisions/0063)."""

    name: str
    type: Literal["counter", "histogram"]
    help: str
    labels: Mapping[str, Allowed] = field(default_factory=dict)
    buckets: tuple[float, ...] = ()

    def bounded(self, values: Mapping[str, str]) -> dict[str, str]:
        """The label set as counted: every declared label, each value allowed or ``other``."""
        if set(values) != set(self.labels):
            raise ValueError(f"{self.name} takes labels {sorted(self.labels)}, not {sorted(values)}")
        return {label: _allowed(values[label], allowed) for label, allowed in self.labels.items()}


def _allowed(value: str, allowed: Allowed) -> str:
    if allowed == "code":
        return code(value)
    if allowed == "account":
        return value if ACCOUNT_ID.match(value) else OTHER
    return value if value in allowed else OTHER


def code(value: str | None) -> str:
    """A reason code as a label value: itself when it looks like one (``grant.expired``), else ``other``."""
    return value if value is not None and _CODE.match(value) else OTHER


def _pipeline(name: str, help_text: str, **labels: Allowed) -> Family:
    return Family(name, "counter", help_text, {"kind": PIPELINE_KINDS, **labels})


VALIDATION_REFUSALS = _pipeline(
    "paygate_payout_validation_refusals", "Deliveries refused by worker validation, by reason code", reason="code")
DELIVERIES_POSTPONED = _pipeline(
    "paygate_payout_deliveries_postponed", "Deliveries postponed (context unavailable, grant not yet valid)",
    reason="code")
DUPLICATE_DELIVERIES = _pipeline(
    "paygate_payout_duplicate_deliveries", "Deliveries of a grant already consumed by this payout's attempt")
CLAIMS_LOST = _pipeline("paygate_payout_claims_lost", "Claims lost to another worker (claim.lost)")
FENCE_ROLLBACKS = _pipeline(
    "paygate_payout_context_fence_rollbacks", "Claims rolled back by the context fence (claim.context-changed)")
UNCONFIRMED_WRITES = _pipeline(
    "paygate_payout_unconfirmed_writes", "Claim, Started or outcome writes whose commit could not be confirmed",
    step=("claim", "start", "record"))
LEASES_FENCED = _pipeline(
    "paygate_payout_leases_fenced", "Lapsed leases the sweeper fenced, by the state it recorded",
    state=("NotStarted", "Unknown"))
EXECUTIONS = _pipeline(
    "paygate_payout_executions", "Claimed attempts by the state the executor recorded (Started: sends exhausted)",
    state=("Succeeded", "Failed", "Unknown", "Started", "NotStarted"))
RECONCILIATIONS = _pipeline(
    "paygate_payout_reconciliations", "Reconciler passes over one attempt, by outcome",
    outcome=("succeeded", "failed", "not_applied", "not_found", "processing", "mismatch", "lookup_failed",
             "rate_limited", "account_not_configured", "already_resolved"))
# Every provider call of every kind (checkout's create, lookup, payment-method check and client-secret read; each
# pipeline kind's create and lookup): what it was for and the account it went to (the operator's
# latency and error rate per account, docs/decisions/0063), one family (docs/decisions/0065).
PROVIDER_CALLS = Family(
    "paygate_provider_call_seconds", "histogram",
    "Provider calls of every attempt kind, by operation, account, outcome",
    {"kind": tuple(kind.name for kind in KINDS),
     "operation": ("create", "lookup", "payment_method", "list", "client_secret"),
     "account": "account", "outcome": CALL_OUTCOMES}, LATENCY_BUCKETS)
# Counted by the database itself, in the deciding transaction (schema.sql, paygate_count_decision):
# a decision is a row, so its count commits with it. Declared here so /metrics knows its shape.
DECISIONS = _pipeline("paygate_payout_decisions", "Decisions by outcome and reason code",
                      outcome=("Allowed", "Denied", "Deferred", "AcknowledgmentRequired", "EscalationRecommended"),
                      reason="code")

# Provider-side reconciliation runs (docs/decisions/0071), each counted once its transaction committed.
RECONCILIATION_RUNS = Family("paygate_reconciliation_runs", "counter",
                             "Provider-side reconciliation runs that ended, by outcome",
                             {"outcome": ("finished", "failed")})
RECONCILIATION_FINDINGS = Family(
    "paygate_reconciliation_findings", "counter", "Provider objects a reconciliation run classified, by class",
    {"class": ("matched", "evidence", "orphan", "disagreement", "missing")})
RECONCILIATION_OBJECTS_READ = Family(
    "paygate_reconciliation_objects_read", "counter", "Provider objects reconciliation runs listed, by kind",
    {"kind": tuple(kind.name for kind in KINDS)})

FAMILIES: dict[str, Family] = {f.name: f for f in (
    VALIDATION_REFUSALS, DELIVERIES_POSTPONED, DUPLICATE_DELIVERIES, CLAIMS_LOST, FENCE_ROLLBACKS,
    UNCONFIRMED_WRITES, LEASES_FENCED, EXECUTIONS, RECONCILIATIONS, PROVIDER_CALLS, DECISIONS,
    RECONCILIATION_RUNS, RECONCILIATION_FINDINGS, RECONCILIATION_OBJECTS_READ)}

# (sample name, sorted label items) -> delta not yet flushed. Sample names are the exposition's:
# ``<counter>_total``, ``<histogram>_bucket`` (with ``le``), ``_sum``, ``_count``.
Key = tuple[str, tuple[tuple[str, str], ...]]
_pending: dict[Key, float] = {}
_lock = threading.Lock()  # actors of one worker run on one loop, but nothing here should depend on it


def count(family: Family, amount: float = 1.0, **labels: str) -> None:
    """Count ``amount`` events of a counter family in this process (flushed later)."""
    [key] = _keys(family.name, "counter", tuple(labels.items()))
    with _lock:
        _pending[key] = _pending.get(key, 0.0) + amount


def observe(family: Family, value: float, **labels: str) -> None:
    """One observation of a histogram family: its cumulative buckets, sum and count."""
    *buckets, sum_key, count_key = _keys(family.name, "histogram", tuple(labels.items()))
    with _lock:
        for bound, key in zip(family.buckets, buckets, strict=False):
            if value <= bound:
                _pending[key] = _pending.get(key, 0.0) + 1.0
        for key, delta in ((buckets[-1], 1.0), (sum_key, value), (count_key, 1.0)):  # +Inf, sum, count
            _pending[key] = _pending.get(key, 0.0) + delta


@functools.lru_cache(maxsize=4096)
def _keys(name: str, typ: str, labels: tuple[tuple[str, str], ...]) -> tuple[Key, ...]:
    """The pending-delta keys one counting call adds to, worked out once per label set: a
    counter's ``_total``; a histogram's buckets (``+Inf`` last), ``_sum`` and ``_count``."""
    family = FAMILIES[name]
    if family.type != typ:
        raise ValueError(f"{name} is a {family.type}")
    bounded = family.bounded(dict(labels))
    if typ == "counter":
        return ((f"{name}_total", tuple(sorted(bounded.items()))),)
    buckets = tuple((f"{name}_bucket", tuple(sorted((bounded | {"le": _le(bound)}).items())))
                    for bound in (*family.buckets, float("inf")))
    plain = tuple(sorted(bounded.items()))
    return (*buckets, (f"{name}_sum", plain), (f"{name}_count", plain))


def _le(bound: float) -> str:
    return "+Inf" if bound == float("inf") else repr(bound)


def take() -> dict[Key, float]:
    """Everything counted since the last take, removed from the pending deltas."""
    global _pending
    with _lock:
        taken, _pending = _pending, {}
    return taken


def give_back(taken: Mapping[Key, float]) -> None:
    """Return deltas whose flush failed, to go with the next one."""
    with _lock:
        for key, value in taken.items():
            _pending[key] = _pending.get(key, 0.0) + value


def call_outcome(status: int | None, error: BaseException | None) -> str:
    """What one provider call came to: its HTTP status class, or how it ended without one."""
    if error is not None:
        if isinstance(error, (TimeoutError, httpx.TimeoutException, asyncio.CancelledError)):
            return "timeout"  # a budget on the clock cancels the call: it ended without an answer
        return "transport" if isinstance(error, httpx.TransportError) else "error"
    if status is None or status < 300:
        return "ok"
    if status == 429:
        return "rate_limited"
    return "server_error" if status >= 500 else "rejected"


class Answered(Protocol):
    """What a provider call answers with: an httpx response or the answer read without one
    (gateway.outbound.Answer)."""

    @property
    def status_code(self) -> int: ...


AnswerT = TypeVar("AnswerT", bound=Answered)


async def provider_call(call: Awaitable[AnswerT], *, kind: str, operation: str, account: str) -> AnswerT:
    """The one place a provider call is timed and counted: await ``call``, observe its duration
    under its kind, operation, account and outcome in :data:`PROVIDER_CALLS`, and return or raise
    exactly what it did. Durations are measured on the monotonic counter: they are measurements,
    not deadlines, which stay on the injected clock."""
    started = time.perf_counter()
    status: int | None = None
    error: BaseException | None = None
    try:
        response = await call
        status = response.status_code
        return response
    except BaseException as raised:
        error = raised
        raise
    finally:
        observe(PROVIDER_CALLS, time.perf_counter() - started, kind=kind, operation=operation, account=account,
                outcome=call_outcome(status, error))
