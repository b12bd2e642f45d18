"""Seed 001's effect records, protocol ledger, send gate and certificates."""
