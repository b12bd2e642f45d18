"""Payout errors: one class per stable problem+json code (API.md, Payouts; STYLE, example 10).
Refusals of the worker's validation pipeline are not errors: they are reason codes in evidence."""

from __future__ import annotations

from gateway.domain.errors import NotFound, PaygateError


class PayoutNotFound(NotFound):
    """No such payout."""

    code = "payout.not_found"


class GrantNotFound(NotFound):
    """No such grant."""

    code = "grant.not_found"


class PolicyOperationNotFound(NotFound):
    """No such policy operation."""

    code = "policy.not_found"


class TermsMismatch(PaygateError):
    """The request's terms differ from the payout record; no decision was made."""

    code, status = "payout.terms_mismatch", 409


class AttemptUnresolved(PaygateError):
    """An attempt of this payout is Claimed, Started or Unknown; reconcile it first."""

    code, status = "payout.attempt_unresolved", 409


class PayoutConflict(PaygateError):
    """A payout with this id already exists with other terms."""

    code, status = "payout.conflict", 409


class NotCancellable(PaygateError):
    """The payout can no longer be cancelled: an attempt exists or it is final."""

    code, status = "payout.not_cancellable", 409


class GrantNotRevocable(PaygateError):
    """Only an Issued grant can be revoked; a consumed grant's attempt follows its own outcome."""

    code, status = "grant.not_revocable", 409


class NotRecallable(PaygateError):
    """Only a Paid payout can be recalled (docs/decisions/0015); no decision was made."""

    code, status = "payout.not_recallable", 409
