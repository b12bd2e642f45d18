"""The transactional outbox (seed 004, "Downstream Work")."""
