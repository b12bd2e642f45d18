"""Refunds of an order's payment: their own decisions, grants and attempts (docs/decisions/0019). Pure
rules are in ``gateway.domain.refunds``."""
