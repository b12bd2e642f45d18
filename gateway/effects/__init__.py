"""Seed 001's generic core: effect records and their protocol ledger, the send gate, certificates
and what the APIs show of effects. Each area adapts its own attempts to it (checkout:
gateway.payments.sends; payouts and recalls: gateway.pipeline.effects with gateway.payouts.governance);
nothing here imports an area (docs/architecture.md).
"""
