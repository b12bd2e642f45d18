"""Every kind of attempt paygate makes, registered once (seed 001: every consequential effect is one
record of one kind; seed 000: payouts and their recalls; seed 004: checkout payments and, as "its own
operation", refunds).

Each table that is kept per kind is derived from :data:`KINDS`: the effect records' kinds and their
protocol consistency (gateway.domain.effect_protocol), the escalation key prefixes
(gateway.effects.ledger), the ``kind`` label of the pipeline's metric families
(gateway.instruments), the metrics' per-kind gauges and job kinds (gateway.http.metrics), the job
publishers and redelivery sources (jobs.attempts), each pipeline kind's ``Rows``, and the SQL
composed per kind (gateway.store.per_kind): the gauges read from the attempt tables, the grants
gauges per grant operation and the kind of an open escalation (gateway.store.gauges), and the
Succeeded attempts a reconciliation run looks for in a listing (gateway.reconciliation.runs).
A new kind is one :class:`Kind` here, its ``gateway.pipeline.kind.AttemptKind`` in its area, its
job actor, and an ``Operation`` in each provider's table (docs/architecture.md, "Adding an attempt
kind"). Every name below is stored (in effect records, escalation keys, outbox rows) or exposed
(metric labels): never rename one.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Kind:
    """One attempt kind: its effect kind (``effect_records.attempt_kind``, the ``kind`` label), the
    prefix of its escalation keys (``<prefix>:<attempt_id>:<problem>``), the table of its attempts
    and the column stamped when its send began (the age of an Unknown attempt counts from it), and
    the outbox job kind whose row starts one of its attempts. A kind without a job (checkout
    payments, sent inside the customer's request) is not one of the attempt pipeline's.

    ``provider_id`` is the column holding the provider's id of an attempt's object (what a
    reconciliation run matches listed objects by). A pipeline kind sends under a grant (seed 000:
    "no money moves without a grant"): ``grants`` is its grants table and ``grant_operation`` the
    operation its grants name. ``escalation_family`` is the prefix every escalation key of the kind
    starts with (its attempts' and its grants'); ``escalation_reasons`` the reason prefixes of its
    episodes keyed elsewhere (a refund owed is keyed by its order). Checkout payments have neither:
    their episodes are checkout's, not a pipeline kind's."""

    name: str
    escalation_prefix: str
    attempts: str
    job_kind: str | None = None
    sent_at: str = "started_at"
    provider_id: str = "provider_id"
    grants: str | None = None
    grant_operation: str | None = None
    escalation_family: str | None = None
    escalation_reasons: tuple[str, ...] = ()

    @property
    def pipeline(self) -> bool:
        """Claimed by a worker from its job, settled by the pipeline's reconciler (gateway.pipeline)."""
        return self.job_kind is not None

    @property
    def job(self) -> str:
        """The outbox job kind of a pipeline kind; ValueError for a kind started without one."""
        if self.job_kind is None:
            raise ValueError(f"{self.name} attempts are not started by an outbox job")
        return self.job_kind


PAYMENT = Kind("payment", "attempt", "payment_attempts", sent_at="first_sent_at", provider_id="provider_payment_id")
PAYOUT = Kind("payout", "payout-attempt", "payout_attempts", "payout-job", provider_id="provider_payout_id",
              grants="payout_grants", grant_operation="payout.submit", escalation_family="payout-")
PAYOUT_RECALL = Kind("payout_recall", "payout-recall-attempt", "payout_recall_attempts", "payout-recall-job",
                     provider_id="provider_recall_id", grants="payout_recall_grants", grant_operation="payout.recall",
                     escalation_family="payout-recall-")
PAYMENT_REFUND = Kind("payment_refund", "payment-refund-attempt", "payment_refund_attempts", "payment-refund-job",
                      provider_id="provider_refund_id", grants="payment_refund_grants",
                      grant_operation="payment.refund", escalation_family="payment-refund-",
                      escalation_reasons=("payment-refund-", "refund-owed"))

KINDS: tuple[Kind, ...] = (PAYMENT, PAYOUT, PAYOUT_RECALL, PAYMENT_REFUND)


def pipeline_kinds(kinds: tuple[Kind, ...] = KINDS) -> tuple[Kind, ...]:
    """The attempt pipeline's kinds, in registry order."""
    return tuple(kind for kind in kinds if kind.pipeline)


def granted_kinds(kinds: tuple[Kind, ...] = KINDS) -> tuple[Kind, ...]:
    """The kinds that send under a grant, in registry order."""
    return tuple(kind for kind in kinds if kind.grants is not None)


def escalating_kinds(kinds: tuple[Kind, ...] = KINDS) -> tuple[Kind, ...]:
    """The kinds whose episodes are told apart by key prefix, the most specific prefix first (a
    ``payout-recall-`` key also starts with ``payout-``)."""
    return tuple(sorted((kind for kind in kinds if kind.escalation_family is not None),
                        key=lambda kind: -len(kind.escalation_family or "")))


def named(name: str, kinds: tuple[Kind, ...] = KINDS) -> Kind:
    """The registered kind called ``name``; KeyError for a name no kind has."""
    for kind in kinds:
        if kind.name == name:
            return kind
    raise KeyError(f"no attempt kind is called {name!r}")
