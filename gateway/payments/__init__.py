"""Checkout payments: the attempt aggregate, the payment client and the checkout flow (seed 004)."""
