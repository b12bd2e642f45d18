"""paygate: a webhook-and-reconciliation gateway for payments.

Record every consequential request before it is sent, never round an unanswered call off to
"failed", and find out what happened before anything is sent again (seed 004, invariants).
"""
