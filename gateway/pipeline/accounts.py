"""Which provider account an existing attempt's calls use: the one STORED on the attempt, never a
default (docs/decisions/0007; seed 000 "Reconcile Before Any New Attempt": the
lookup asks the account the attempt was sent on; seed 004: the payment client never falls back).

Choosing the account of a NEW attempt is the kind's configuration decision, made once in its claim
and stored with the attempt. A stored account that is no longer configured is not a reason to ask
another one: the pipeline raises ``account-not-configured`` and leaves the attempt as it is.
"""

from __future__ import annotations

from gateway.pipeline.kind import AttemptKind, Row
from gateway.providers import Operation, contract, provider_for
from gateway.settings import ProviderAccount, Settings

NOT_CONFIGURED = "account-not-configured"


def stored_account(settings: Settings, attempt: Row) -> ProviderAccount | None:
    """The configured account the attempt records, or None when it is no longer configured."""
    return settings.account(attempt["provider_account"])


def operation(kind: AttemptKind, account_id: str) -> Operation:
    """The kind's contract with the provider of ``account_id`` (gateway.providers); raises
    ``UnsupportedOperation`` where that provider has none (docs/decisions/0047)."""
    return contract(provider_for(account_id), kind.name, Operation)
