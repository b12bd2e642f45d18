"""The attempt-kind description: everything that differs between two instances of the attempt
pipeline (seed 000 sections 8-13 and 17; docs/architecture.md, "Adding an attempt kind").

The pipeline (executor, reconciler, sweeper, resolution, notification application, views) is
written once against :class:`AttemptKind`; payouts (``gateway.payouts.attempts.PAYOUT``) and
payout recalls (``gateway.payouts.recalls.RECALL``) are two values of it. A kind states:

- its identity: ``name`` (a pipeline kind registered in gateway.domain.attempt_kinds: the seed 001
  effect kind, the escalation key prefix through
  ``gateway.effects.ledger.escalation_key``, the prefix of its log events and escalation reasons),
  its ``operation`` and the ``parent`` column naming the row it acts for (``payout_id``);
- its storage: :class:`~gateway.pipeline.rows.Rows` (attempt table, grant table or None, the
  provider-id column) and the ``history`` writer its evidence goes to;
- its authority: ``admit`` (the grant checks, or whatever authorizes the kind) and ``claim`` (the
  atomic transaction that creates the Claimed attempt, its reference, key and seed 001 record);
- its provider contract, which is the provider's (``gateway.providers``: the ``Operation`` of the
  kind's ``name`` on the attempt's account: the exact request of every send, the lookup, the
  versioned classification table), and what is the kind's own: ``manifest`` (what the effect
  digest commits to, from the business fields the provider reads back from a send's body) and
  ``identity`` (what a record must also match to be the attempt's);
- its effect on the parent row: ``follow`` (in the resolving transaction) and ``record_return``;
- its ``evidence`` query, which a confirmed effect's certificate cites (seed 001).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal, Protocol

from gateway.domain import attempt_kinds
from gateway.domain.attempt_timing import AttemptTimings
from gateway.domain.effect_manifest import AttemptKind as EffectKind
from gateway.domain.effect_manifest import Transport
from gateway.domain.outcomes import AttemptState, Expected
from gateway.pipeline.rows import Rows
from gateway.settings import ProviderAccount, Settings
from gateway.store.db import Connection, Database, Statement

Event = Literal["transition", "delivery", "provider_observation", "reconciliation"]
Row = dict[str, Any]


@dataclass(frozen=True)
class Presenter:
    """A workload identity: which service presents a grant, and the audiences it serves."""

    service_id: str
    audiences: frozenset[str]


@dataclass(frozen=True)
class Refused:
    """A delivery refused before or by the claim (``claim.lost``, ``claim.context-changed``);
    ``grant`` when one is known (evidence attaches to it)."""

    code: str
    grant: Row | None = None
    detail: dict[str, Any] | None = None


@dataclass(frozen=True)
class Postponed:
    code: str
    until: datetime | None = None


@dataclass(frozen=True)
class Claimed:
    attempt: Row
    secret: str | None = None  # held in memory by the executor (a payout's destination token); never written


class Job(Protocol):
    """What a queue message carries: references only."""

    @property
    def correlation_id(self) -> str: ...

    def ids(self) -> dict[str, str]: ...


class History(Protocol):
    """Appends one evidence event for the kind, in the caller's transaction."""

    def __call__(self, conn: Connection, parent_id: str, event: Event, /, *, actor: str, now: datetime,
                 detail: dict[str, Any], attempt_id: Any = None, grant_id: Any = None,
                 correlation_id: str | None = None) -> Awaitable[None]: ...


Admit = Callable[[Database, datetime, Any, Presenter], Awaitable[Any]]  # -> admitted | Refused | Postponed
Claim = Callable[[Database, datetime, Settings, Any, str], Awaitable[Claimed | Refused]]
# The parent row follows a resolution (in its transaction); returns what the transition event adds.
Follow = Callable[[Connection, datetime, Row, AttemptState], Awaitable[dict[str, Any]]]
RecordReturn = Callable[[Connection, datetime, Row, str, bool], Awaitable[bool]]


async def _parent_unchanged(conn: Connection, now: datetime, row: Row, state: AttemptState) -> dict[str, Any]:
    return {}


@dataclass(frozen=True)
class AttemptKind:
    name: EffectKind
    operation: str
    parent: str
    rows: Rows
    history: History
    admit: Admit
    claim: Claim
    manifest: Callable[[Transport, dict[str, Any], Row], dict[str, Any]]  # from the send's business fields
    timings: Callable[[Settings, ProviderAccount | None], AttemptTimings]  # None: the kind's configured account
    attempt_fields: tuple[str, ...]  # what GET shows of an attempt, besides its ``effect``
    evidence: Statement  # the area's query of an attempt's evidence event ids, cited by its certificate
    identity: Callable[[Row, Row], bool] = field(default=lambda attempt, record: True)
    secret_matches: Callable[[str, Row, str | None], bool] = field(default=lambda pepper, attempt, secret: True)
    follow: Follow = _parent_unchanged
    record_return: RecordReturn | None = None
    escalation_facts: Callable[[Row], dict[str, Any]] = field(default=lambda attempt: {})

    def __post_init__(self) -> None:
        if not attempt_kinds.named(self.name).pipeline:  # KeyError: not registered
            raise ValueError(f"{self.name} is not a kind of the attempt pipeline (gateway.domain.attempt_kinds)")

    @property
    def label(self) -> str:
        """``payout recall``: how notes and messages name the kind."""
        return self.name.replace("_", " ")

    @property
    def slug(self) -> str:
        """``payout-recall``: the prefix of the kind's escalation reasons."""
        return self.name.replace("_", "-")

    def expected(self, attempt: Row) -> Expected:
        """What a provider record must agree with to be this attempt's."""
        return Expected(attempt["client_reference"], attempt["amount_minor"], attempt["currency"])
