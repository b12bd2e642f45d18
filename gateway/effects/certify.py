"""Issuing effect certificates with the configured Ed25519 keys (seed 001; API.md, "Shapes" and
``GET /v1/keys/certificates``; docs/decisions/0013-certificates-in-the-confirming-transaction.md).

A confirmed effect is certified in the transaction that confirms it: the certificate exists
exactly when the Succeeded write committed, with no job to lag or lose it. Keys come from
settings: the one ``active`` key signs; retired keys stay listed (``active: false``) so the
certificates they signed still verify. Without an active key an effect stays EFFECT_CONFIRMED.
"""

from __future__ import annotations

import base64
import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import structlog
from psycopg.types.json import Jsonb

from gateway.domain.certificates import ALG, CERTIFICATE_VERSION, STATEMENT, sign
from gateway.domain.effect_protocol import ProtocolState
from gateway.domain.timestamps import rfc3339
from gateway.effects.ledger import next_entry
from gateway.settings import CertificateKey, Settings
from gateway.store.db import Connection, Statement, fetch_all, fetch_one
from gateway.store.queries import load_queries

_SQL = load_queries("gateway.effects")
log = structlog.get_logger("gateway.effects")



@dataclass(frozen=True)
class Subject:
    """What the area whose attempt confirmed an effect tells its certificate: the row the attempt
    acts for (``order_id`` or ``payout_id``, and its value), the provider's reference and status,
    and the area's own query for the evidence its confirming transaction recorded
    (``SELECT event_id ... WHERE attempt_id = %(attempt_id)s``). The effects core reads no area's
    tables itself (docs/decisions/0018)."""

    field: str
    value: str
    provider_reference: str | None
    provider_status: str | None
    evidence: Statement
    # Its answer as the caller already read it in this transaction, after the evidence it must see
    # (ledger.lock_record_with: with the record's lock), instead of a statement of its own.
    evidence_event_ids: list[int] | None = None


@dataclass(frozen=True)
class Certifier:
    keys: tuple[CertificateKey, ...]

    @classmethod
    def of(cls, settings: Settings) -> Certifier:
        return cls(tuple(settings.certificate_keys))

    @property
    def active(self) -> CertificateKey | None:
        return next((key for key in self.keys if key.active), None)

    @property
    def key_id(self) -> str | None:
        return None if self.active is None else self.active.key_id

    def public_keys(self) -> dict[str, bytes]:
        return {key.key_id: key.public_bytes for key in self.keys}

    def published(self) -> dict[str, Any]:
        """``GET /v1/keys/certificates``: every key that may have signed a certificate."""
        return {"keys": [{"key_id": key.key_id, "alg": ALG, "active": key.active,
                          "public_key": base64.b64encode(key.public_bytes).decode("ascii")} for key in self.keys]}

    async def issue(self, conn: Connection, record: dict[str, Any], subject: Subject, now: datetime, *,
                    actor: str, before: Jsonb | None = None) -> dict[str, Any] | None:
        """Sign and store the certificate of ``record``'s confirmed effect (locked by the caller, in
        EFFECT_CONFIRMED) with its CERTIFIED ledger row, in one statement whose answer nothing waits
        for; the record as it stands after (CERTIFIED), or None without an active key (nothing sent).
        ``before``: the ledger rows that bring the record to EFFECT_CONFIRMED, not sent yet (as
        ``append_ledger``'s ``entries``), appended by the same statement.
        A certificate already issued is not rewritten and no CERTIFIED row is appended
        (queries.sql); under the record's lock in EFFECT_CONFIRMED there is none, since a
        certificate always commits with its CERTIFIED row."""
        key = self.active
        if key is None:
            log.warning("effect_not_certified", attempt_id=str(record["attempt_id"]), why="no active certificate key")
            return None
        evidence = subject.evidence_event_ids if subject.evidence_event_ids is not None else [
            row["event_id"] for row in await fetch_all(conn, subject.evidence, {"attempt_id": record["attempt_id"]})]
        certificate = document(record, subject, evidence, now)
        signed = sign(certificate, key_id=key.key_id, private_seed=key.private_bytes)
        entry, certified = next_entry(record, ProtocolState.CERTIFIED, {"key_id": key.key_id}, actor, now)
        await conn.execute(_SQL["insert_certificate"], {
            **entry, "certificate": Jsonb(certificate), "key_id": key.key_id,
            "signature": signed["signature"]["value"], "before": before if before is not None else Jsonb([])})
        return certified


def document(record: dict[str, Any], subject: Subject, evidence: list[int], now: datetime) -> dict[str, Any]:
    """The certificate of ``record``'s confirmed effect, unsigned (API.md "Shapes"; seed 001):
    what its manifest and the confirming area's ``subject`` say, and the ``evidence`` event ids."""
    manifest = record["manifest"]
    return {
        "certificate_version": CERTIFICATE_VERSION, "attempt_kind": record["attempt_kind"],
        "operation": manifest["operation"], "attempt_id": str(record["attempt_id"]), subject.field: subject.value,
        "rail": record["rail"], "provider_account": record["provider_account"],
        "idempotency_key": record["idempotency_key"], "client_reference": manifest["client_reference"],
        "amount_minor": manifest["amount_minor"], "currency": manifest["currency"],
        "effect_digest": bytes(record["effect_digest"]).hex(),
        "policy_digest": _hex(record["policy_digest"]), "approval_set_digest": _hex(record["approval_set_digest"]),
        "outcome": "EFFECT_CONFIRMED", "provider_reference": subject.provider_reference,
        "provider_status": subject.provider_status,
        "evidence_event_ids": [int(event_id) for event_id in evidence],
        "issued_at": rfc3339(now), "statement": STATEMENT,
    }


def _hex(value: bytes | None) -> str | None:
    return None if value is None else bytes(value).hex()


async def certificate_of(conn: Connection, attempt_id: uuid.UUID) -> dict[str, Any] | None:
    """The signed document of an issued certificate, exactly as API.md "Shapes" describes it."""
    row = await fetch_one(conn, _SQL["get_certificate"], {"attempt_id": attempt_id})
    if row is None:
        return None
    return {"certificate": row["certificate"],
            "signature": {"alg": ALG, "key_id": row["key_id"], "value": row["signature"]}}
