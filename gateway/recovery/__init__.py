"""The recovery loop: finds stalled attempts by lease and finds out what happened (seed 004)."""
