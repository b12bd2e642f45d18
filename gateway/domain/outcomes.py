"""The outcome vocabulary of every attempt kind, checkout payments and the pipeline's payouts,
recalls and refunds alike: one :class:`AttemptState`, the sets of states each rule speaks of, and
the classification of a provider's answer by what it can prove (seed 000, "Classify the Outcome by
What the Provider Can Prove"; "Production Adaptation": an explicit, versioned classification table
per provider, with recorded test vectors for each row; seed 004, "The Attempt Row").

This module holds the shape of a table (:class:`StatusTable`, :class:`Row`), the rows every
provider shares and the classification itself; each provider's tables are in its package
(``gateway/providers/<provider>/tables.py``, CardCo's vectors in tests/unit/test_payout_outcomes.py).
The HTTP status alone decides nothing. Every row names the provider's documented meaning;
whatever no row documents, and every way a call ends without a readable answer, is Unknown.
``Started`` with ``resend`` is the one row that permits a bounded same-key resend inside the
attempt: a rejection the provider documents as no-effect and transient. An answer on
such a row that says not to send it again (Stripe's ``Stripe-Should-Retry: false``) is the seed's
"rejection it documents as no-effect ... resending fails the same way": Failed (docs/decisions/0059).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Literal


class AttemptState(StrEnum):
    CLAIMED = "Claimed"
    STARTED = "Started"
    UNKNOWN = "Unknown"
    SUCCEEDED = "Succeeded"
    FAILED = "Failed"
    NOT_STARTED = "NotStarted"
    NOT_APPLIED = "NotApplied"


# What the provider's evidence (or a decisive "not found") settles an attempt as: never overwritten.
SETTLED = frozenset({AttemptState.SUCCEEDED, AttemptState.FAILED, AttemptState.NOT_APPLIED})
# Sent, or possibly sent, and not yet settled: what a lookup or a notification may resolve.
IN_FLIGHT = (AttemptState.STARTED, AttemptState.UNKNOWN)
# No cooperating sender transmitted it: provider evidence about it means something is badly wrong.
NEVER_SENT = frozenset({AttemptState.CLAIMED, AttemptState.NOT_STARTED})
# A claimed kind's final states: a claim that lapsed before Started leaves NotStarted for good (a
# checkout attempt, never claimed, is inserted NotStarted and is sent or closed from there).
FINAL_AFTER_CLAIM = SETTLED | {AttemptState.NOT_STARTED}


# The payout state each attempt resolution leaves behind (seed 000, the classification table).
PAYOUT_STATE_AFTER = {
    AttemptState.SUCCEEDED: "Paid",
    AttemptState.FAILED: "Failed",
    AttemptState.UNKNOWN: "Unknown",
    AttemptState.NOT_STARTED: "Approved",  # awaiting fresh authority: the grant is consumed
    AttemptState.NOT_APPLIED: "Approved",  # awaiting a fresh decision
    AttemptState.STARTED: "Executing",
}


@dataclass(frozen=True)
class Row:
    state: AttemptState
    reason: str
    meaning: str
    resend: bool = False


@dataclass(frozen=True)
class StatusTable:
    """One provider object's classification: its status rows (2xx answers and lookups, by the
    object's ``status``), its error rows (by HTTP status and the provider's error code, or its
    error type where it gives no code), and the version that evidence records."""

    version: str
    rows: dict[str, Row]
    errors: dict[tuple[int, str], Row] = field(default_factory=dict)
    # How an object in a 2xx answer reads as the common record (id, client_reference, amount_minor,
    # currency, status, failure_code); lookups and notifications hand over common records already.
    record: Callable[[dict[str, Any]], dict[str, Any]] = field(default=lambda document: document)


NO_RESPONSE = Row(AttemptState.UNKNOWN, "provider.no-response",
                  "timeout, reset or crash after Started: the provider may have completed the payout")
MALFORMED = Row(AttemptState.UNKNOWN, "provider.malformed-response", "an answer nobody can read proves nothing")
UNDOCUMENTED = Row(AttemptState.UNKNOWN, "provider.undocumented-response",
                   "not documented as no-effect (e.g. 500): indeterminate")
DO_NOT_RESEND = Row(AttemptState.FAILED, "provider.do-not-retry",
                    "a rejection documented as no-effect that the provider says not to send again (Stripe-Should-"
                    "Retry: false): resending fails the same way (docs/decisions/0059)")
MISMATCH = Row(AttemptState.UNKNOWN, "provider.record-mismatch",
               "a record whose reference, amount or currency differs from the attempt is not this attempt's")


def replaces_recorded_id(recorded: str | None, found: str | None) -> bool:
    """Seed 004 ("Persisting the Attempt", on the provider's id): "set it only when it is still
    NULL, check equality when it is already set, and treat a different ID for the same attempt as a
    contradiction"; it "never silently replaces the recorded ID". True when evidence names an id
    other than the one the attempt recorded: that evidence is not this attempt's (a mismatch)."""
    return recorded is not None and found is not None and found != recorded


class ProviderIdClaimed(Exception):
    """The provider id an attempt would record is already another attempt's of its account (the
    kind's unique index, translated at the repository boundary by its name): nothing was written,
    and the conflict proves nothing about either attempt (seed 004). It never leaves the pipeline,
    which escalates it as a mismatch."""

    def __init__(self, provider_id: str) -> None:
        super().__init__(f"provider id {provider_id} is another attempt's")
        self.provider_id = provider_id


@dataclass(frozen=True)
class Expected:
    """What a provider record must agree with to be this attempt's."""

    client_reference: str
    amount_minor: int
    currency: str


@dataclass(frozen=True)
class ProviderResponse:
    """An answer: its status and body, its ``Retry-After`` in seconds (None: no usable header), and
    whether the provider allows sending the request again (False: it said not to)."""

    status: int
    body: bytes
    retry_after_s: float | None = None
    resend_allowed: bool = True
    request_id: str | None = None  # the provider's id of this request (Stripe's ``Request-Id``), for support


@dataclass(frozen=True)
class NoResponse:
    """A call that ended without a readable answer (gateway.providers.answers): Unknown for every
    kind. ``reason`` says how it ended, for the kinds that record it (a checkout attempt's
    ``outcome_reason``); a pipeline kind records the table's ``provider.no-response``."""

    kind: Literal["timeout", "transport"]
    reason: str = "provider.no-response"


Observation = ProviderResponse | NoResponse


@dataclass(frozen=True)
class Classification:
    row: Row
    table: str  # the classification table version it came from (seed 000: versioned)
    provider_id: str | None = None
    provider_status: str | None = None
    failure_code: str | None = None
    retry_after_s: float | None = None  # a resend row's Retry-After; None: the answer gave none

    @property
    def state(self) -> AttemptState:
        return self.row.state

    @property
    def reason(self) -> str:
        return self.failure_code or self.row.reason

    @property
    def returned(self) -> bool:
        return self.provider_status == "returned"


def classify_record(record: dict[str, Any], expected: Expected, table: StatusTable) -> Classification:
    """A provider object (a payout, recall or refund, read by ``table``) from a 200 answer or a
    lookup, checked against the attempt first."""
    if (record.get("client_reference") != expected.client_reference
            or record.get("amount_minor") != expected.amount_minor
            or record.get("currency") != expected.currency):
        return Classification(MISMATCH, table.version, provider_id=_str(record.get("id")))
    status = record.get("status")
    row = table.rows.get(status) if isinstance(status, str) else None
    if row is None:
        return Classification(UNDOCUMENTED, table.version, provider_id=_str(record.get("id")))
    failure = _str(record.get("failure_code")) if row.state is AttemptState.FAILED else None
    return Classification(row, table.version, provider_id=_str(record.get("id")), provider_status=str(status),
                          failure_code=failure)


def classify(observation: Observation, expected: Expected, table: StatusTable) -> Classification:
    """The attempt state one send's observation establishes."""
    if isinstance(observation, NoResponse):
        return Classification(NO_RESPONSE, table.version)
    try:
        document = json.loads(observation.body)
    except ValueError:
        return Classification(MALFORMED, table.version)
    if not isinstance(document, dict):
        return Classification(MALFORMED, table.version)
    if observation.status == 200:
        return classify_record(table.record(document), expected, table)
    error = document.get("error")
    # The provider's error code names the row; where no row names that code, its error type may.
    names = [error.get("code"), error.get("type")] if isinstance(error, dict) else []
    row = next((table.errors[(observation.status, name)] for name in names
                if isinstance(name, str) and (observation.status, name) in table.errors), None)
    if row is None:
        return Classification(UNDOCUMENTED, table.version)
    if not row.resend:
        return Classification(row, table.version)
    if not observation.resend_allowed:
        return Classification(DO_NOT_RESEND, table.version)
    return Classification(row, table.version, retry_after_s=observation.retry_after_s)


def _str(value: object) -> str | None:
    return value if isinstance(value, str) else None
