"""Provider notifications: verify, record once, match, apply or escalate (seed 004)."""
