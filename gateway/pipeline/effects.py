"""Seed 001 for every attempt kind: the intent an attempt's send carries, and the send gate every
send (the first and each bounded same-key resend) passes first ("Stable identity and exact bytes":
"A second worker may resume the intent. It may not improvise a second payment").

The intent is derived from exactly what the send carries: the request the provider's operation
makes for the attempt (path and bytes) on the attempt's stored account, under the attempt's fixed
key, its business fields read back by the provider and committed to by the kind's ``manifest``.
"""

from __future__ import annotations

from gateway.domain.effect_manifest import ManifestUnbuildable, Transport
from gateway.effects import ledger
from gateway.effects.gate import SendGate
from gateway.pipeline.accounts import operation
from gateway.pipeline.kind import AttemptKind, Row
from gateway.settings import ProviderAccount


def intent(kind: AttemptKind, attempt: Row, account: ProviderAccount, secret: str | None, *,
           policy_digest: bytes | None = None, approval_set_digest: bytes | None = None) -> ledger.Intent:
    contract = operation(kind, account.id)
    request = contract.request(attempt, secret)
    transport = Transport(account.id, account.base_url.rstrip("/") + request.path, account.api_version,
                          attempt["idempotency_key"])
    return ledger.Intent(kind.name, attempt["attempt_id"], transport,
                         kind.manifest(transport, contract.fields(request.body), attempt), policy_digest,
                         approval_set_digest)


async def open_send(kind: AttemptKind, gate: SendGate, attempt: Row, account: ProviderAccount, secret: str | None,
                    *, pepper: str, actor: str) -> str | None:
    """None when this send may go; else why not. A secret in hand must be the attempt's (a payout's
    token, by its digest), and the request it makes must be the committed effect."""
    def derive() -> ledger.Intent:
        if not kind.secret_matches(pepper, attempt, secret):
            raise ManifestUnbuildable(f"the secret in hand is not the {kind.label} attempt's")
        return intent(kind, attempt, account, secret)

    return await gate.open(kind.name, attempt["attempt_id"], derive, actor=actor)
