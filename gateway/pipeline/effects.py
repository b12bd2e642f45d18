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
from gateway.providers.base import Request
from gateway.settings import ProviderAccount


def intent(kind: AttemptKind, attempt: Row, account: ProviderAccount, secret: str | None, *,
           request: Request | None = None, policy_digest: bytes | None = None,
           approval_set_digest: bytes | None = None) -> ledger.Intent:
    """The intent of a send carrying ``request`` (None: the request the operation makes for the
    attempt, with ``secret`` where the kind has one)."""
    contract = operation(kind, account.id)
    request = request or contract.request(attempt, secret)
    transport = Transport(account.id, account.base_url.rstrip("/") + request.path, account.api_version,
                          attempt["idempotency_key"])
    return ledger.Intent(kind.name, attempt["attempt_id"], transport,
                         kind.manifest(transport, contract.fields(request.body), attempt), policy_digest,
                         approval_set_digest)


async def open_send(kind: AttemptKind, gate: SendGate, attempt: Row, account: ProviderAccount, secret: str | None,
                    *, pepper: str, actor: str, first: Request | None = None) -> Request | str:
    """The request this send carries, once the gate found its digest committed; else why the send
    must not go. The first send's request is made here from the attempt and, for a payout, the
    destination token in hand (a secret, never at rest: its bytes are rebuilt, and this digest
    proves them the committed ones); every resend passes the ``first`` send's request and carries
    exactly its bytes again, under the attempt's stored key, as checkout resends its stored bytes
    (gateway.payments.sends). A secret in hand must be the attempt's (a payout's token, by its digest)."""
    carried: list[Request] = []

    def derive() -> ledger.Intent:
        if not kind.secret_matches(pepper, attempt, secret):
            raise ManifestUnbuildable(f"the secret in hand is not the {kind.label} attempt's")
        carried.append(first or operation(kind, account.id).request(attempt, secret))
        return intent(kind, attempt, account, secret, request=carried[-1])

    refused = await gate.open(kind.name, attempt["attempt_id"], derive, actor=actor)
    return refused if refused is not None else carried[-1]
