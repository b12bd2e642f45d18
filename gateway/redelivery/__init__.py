"""Due work the database publishes again (docs/decisions/0022)."""
