"""Due work the database publishes again (issue 11 item 1; docs/decisions/0022)."""
