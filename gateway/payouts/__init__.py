"""Payouts (seed 000): reference data, payouts, decisions and grants, attempts; the executor, the
sweeper and the reconciler. Each aggregate's SQL lives in the ``.sql`` file named after it."""
