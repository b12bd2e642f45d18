"""Effect records for checkout payment attempts (seed 001 applied to seed 004's attempts).

The record is persisted in the transaction that inserts the NotStarted attempt with its exact
``request_body`` and ``idempotency_key`` (``Attempts._insert``), and every send of the stored
request, the endpoint's first and recovery's same-key resends, goes through :class:`PaymentSends`.
A checkout's policy is the order being Open on a configured account and its approval the owning
customer's POST, so its ledger runs PROPOSED -> POLICY_EVALUATED -> APPROVED -> INTENT_PERSISTED.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from gateway.domain.attempt_kinds import PAYMENT
from gateway.domain.attempts import Evidence
from gateway.domain.effect_manifest import Transport, payment_manifest
from gateway.domain.effect_protocol import ProtocolState
from gateway.effects import ledger
from gateway.effects.gate import SendGate
from gateway.payments.client import PaymentClient, StoredRequest
from gateway.providers import checkout, provider_for
from gateway.store.db import Connection


@functools.lru_cache(maxsize=256)
def payment_intent(stored: StoredRequest, attempt_id: Any) -> ledger.Intent:
    """The intent as the stored request states it, its business fields read by the account's
    provider; raises ManifestUnbuildable for a body that is not the provider's payment request.

    A pure function of every field of ``stored`` and the attempt id, so the process keeps the last
    few: the endpoint's send gate, right after the transaction that persisted the record, derives
    its digest from the stored request read back, and an identical request gives the identical
    intent without a second RFC 8785 canonicalisation; any byte of difference is another key and
    is derived afresh (seed 001, "Stable identity and exact bytes")."""
    transport = Transport(stored.provider_account, stored.endpoint, stored.api_version, stored.idempotency_key)
    fields = checkout(provider_for(stored.provider_account)).fields(stored.request_body)
    return ledger.Intent(PAYMENT.name, attempt_id, transport, payment_manifest(transport, stored.request_body, fields))


def payment_prelude(attempt: dict[str, Any]) -> list[ledger.Step]:
    """A checkout's ledger before INTENT_PERSISTED: the order Open on a configured account, approved
    by its customer's POST."""
    return [(ProtocolState.PROPOSED, {"order_id": attempt["order_id"]}),
            (ProtocolState.POLICY_EVALUATED, {"rule": "order-open-on-configured-account"}),
            (ProtocolState.APPROVED, {"approved_by": "customer", "customer_id": attempt["customer_id"]})]


def payment_record(attempt: dict[str, Any], stored: StoredRequest, *, now: datetime) -> dict[str, Any]:
    """The new attempt's effect record and its first ledger rows as the parameters of the attempt's
    insert (payments/queries.sql ``insert``: ``record_``, then :func:`ledger.record_parameters`'
    names), which writes them only if it inserted the attempt."""
    intent = payment_intent(stored, attempt["attempt_id"])
    parameters = ledger.record_parameters(intent, payment_prelude(attempt), "endpoint", now)
    return {f"record_{name}": value for name, value in parameters.items()}


def payment_persisted(attempt: dict[str, Any], stored: StoredRequest, *, now: datetime) -> dict[str, Any]:
    """The new attempt's effect record as :func:`payment_record`'s insert leaves it
    (:func:`ledger.persisted`)."""
    return ledger.persisted(payment_intent(stored, attempt["attempt_id"]), payment_prelude(attempt), "endpoint", now)


async def persist_payment(conn: Connection, attempt: dict[str, Any], stored: StoredRequest, *, now: datetime,
                          reminder_interval_s: float) -> bool:
    """Persist the new attempt's effect record on its own statement; see
    :func:`gateway.effects.ledger.persist`."""
    return await ledger.persist(conn, payment_intent(stored, attempt["attempt_id"]), prelude=payment_prelude(attempt),
                                actor="endpoint", now=now, reminder_interval_s=reminder_interval_s)


@dataclass(frozen=True)
class Opened:
    """What the send gate answered in the caller's transaction: None, or why the send must not go."""

    refused: str | None


@dataclass(frozen=True)
class PaymentSends:
    """The payment client behind the send gate: the only way a stored request reaches the provider."""

    gate: SendGate
    client: PaymentClient

    async def drifted(self, stored: StoredRequest, attempt_id: Any) -> str | None:
        """Why a send of ``stored`` would be refused (see :meth:`SendGate.check`), or None."""
        return await self.gate.check(attempt_id, lambda: payment_intent(stored, attempt_id))

    async def open_in(self, conn: Connection, stored: StoredRequest, attempt_id: Any, *, actor: str,
                      record: dict[str, Any] | None = None, held: ledger.Held | None = None) -> Opened:
        """The gate for the first send of an attempt being marked Started, in that transaction
        (:meth:`SendGate.open_in`, with the effect ``record`` as the caller locked it and the
        caller's ``held`` ledger rows); pass it to :meth:`create_payment` as ``opened``."""
        return Opened(await self.gate.open_in(conn, PAYMENT.name, attempt_id,
                                              lambda: payment_intent(stored, attempt_id), actor=actor, record=record,
                                              held=held))

    async def create_payment(self, stored: StoredRequest, attempt_id: Any, *, actor: str,
                             budget_s: float | None = None, opened: Opened | None = None) -> Evidence:
        """Send ``stored`` once if its digest is the committed one; otherwise Unknown with the
        reason, as for any stored request that cannot be built (nothing was sent). ``opened`` is
        the gate's answer when the caller opened it in its own transaction (:meth:`open_in`)."""
        refused = opened.refused if opened is not None else await self.gate.open(
            PAYMENT.name, attempt_id, lambda: payment_intent(stored, attempt_id), actor=actor)
        if refused is not None:
            return Evidence.unknown(stored.provider_account, f"request.not-buildable.{refused}")
        return await self.client.create_payment(stored, budget_s=budget_s)
