"""Escalations: one open episode per reason a person must look (seed 004, "Escalations")."""
