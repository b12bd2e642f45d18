"""The attempt pipeline: one executor, reconciler, lease sweeper, resolution, notification
application and view for every consequential provider operation that is claimed by a worker and
reconciled by lookup (seed 000 sections 8-13 and 17; seed 001). Each operation is an instance,
described by a :class:`gateway.pipeline.kind.AttemptKind`: payouts (``gateway.payouts.attempts.PAYOUT``)
and payout recalls (``gateway.payouts.recalls.RECALL``). docs/architecture.md, "Adding an attempt
kind", says how a new one plugs in."""
