"""Stripe (docs/decisions/0046, 0047): its adapter (``adapter``), what its answers mean and how its
form bodies and records read (``answers``), its classification tables (``tables``), its event payload
(``notifications``) and its ``Stripe-Signature`` scheme (``signatures``). Every module but
``adapter`` is pure (an import-linter contract)."""

from gateway.providers.stripe.adapter import STRIPE

__all__ = ["STRIPE"]
