"""Provider-side reconciliation: every object a provider account created in a window matched to
an attempt, and what is not escalated (gateway.reconciliation.runs)."""
