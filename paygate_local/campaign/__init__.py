"""``paygate campaign``: a fault campaign against a real fleet.

The campaign starts its own PostgreSQL and Valkey (or uses ``DATABASE_URL`` / ``REDIS_URL``),
runs the Procfile's processes under the supervisor (CardCo, two web, two workers, one clock),
drives checkouts and payouts over HTTP only while CardCo misbehaves on every request it is told
to, kills and restarts processes and servers on a seeded schedule, lets the system settle, and
checks the invariants of DESIGN.md against CardCo's ledger and request log and the gateway's API
and database. Modules: ``faults`` and ``schedule`` (seeded choices), ``fleet`` (servers and
processes), ``sinkfaults`` (the relay that makes a sink fail), ``pauses`` (a worker stopped past
its lease), ``disruptions`` (running the schedule and recording what it did), ``client`` and
``load`` (the customers, merchants and clerks), ``snapshot`` (what is read afterwards),
``invariants`` (pure checks), ``report`` (table and JSON), ``run``.
"""
