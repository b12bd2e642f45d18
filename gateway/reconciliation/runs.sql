-- Provider-side reconciliation runs and their findings (gateway/reconciliation/runs.py;
-- docs/decisions/0071). :now is always the injected clock's.

-- name: insert_run
INSERT INTO reconciliation_runs (run_id, provider_account, window_from, window_to, state, started_by, requested_at)
VALUES (%(run_id)s, %(provider_account)s, %(window_from)s, %(window_to)s, 'Running', %(started_by)s, %(now)s)
RETURNING *;

-- name: get_run
SELECT * FROM reconciliation_runs WHERE run_id = %(run_id)s;

-- name: lock_run
-- The run as it stands, locked for the transaction that writes one page's findings and moves its
-- position: a second executor of the same run (a redelivered job) waits here, then sees the
-- position moved and drops the page it read.
SELECT * FROM reconciliation_runs WHERE run_id = %(run_id)s FOR UPDATE;

-- name: advance
-- One page done: the next position and the page's counts, in the page's transaction.
UPDATE reconciliation_runs
   SET kind_position = %(kind_position)s, page_cursor = %(page_cursor)s, listed = %(listed)s,
       objects_read = objects_read + %(objects_read)s,
       matched = matched + %(matched)s, evidence = evidence + %(evidence)s, orphan = orphan + %(orphan)s,
       disagreement = disagreement + %(disagreement)s, missing = missing + %(missing)s
 WHERE run_id = %(run_id)s;

-- name: finish
UPDATE reconciliation_runs SET state = %(state)s, finished_at = %(now)s, failure = %(failure)s
 WHERE run_id = %(run_id)s AND state = 'Running'
RETURNING *;

-- name: record_finding
-- A finding is recorded once per run and object: a page read again after a crash adds nothing.
INSERT INTO reconciliation_findings (run_id, provider_account, kind, provider_object_id, class, attempt_id,
                                     details, found_at)
VALUES (%(run_id)s, %(provider_account)s, %(kind)s, %(provider_object_id)s, %(class)s, %(attempt_id)s,
        %(details)s, %(now)s)
ON CONFLICT (run_id, kind, provider_object_id) DO NOTHING
RETURNING class;

-- name: found_before
-- Whether another run already found the same class of finding about the same object: its
-- escalation was raised then, and re-running a window raises no second one (an operator who
-- resolved it has seen it).
SELECT EXISTS (
    SELECT 1 FROM reconciliation_findings
     WHERE provider_account = %(provider_account)s AND kind = %(kind)s
       AND provider_object_id = %(provider_object_id)s AND class = %(class)s AND run_id <> %(run_id)s
) AS found;

-- name: payment_by_provider_id
SELECT * FROM payment_attempts
 WHERE provider_account = %(provider_account)s AND provider_payment_id = %(provider_id)s;

-- name: payment_by_reference
SELECT * FROM payment_attempts
 WHERE provider_account = %(provider_account)s AND client_reference = %(client_reference)s;

-- name: unlisted_succeeded
-- The account's Succeeded attempts whose send began in [:window_from, :before) and whose object
-- this run did not list (by the provider id each recorded): the run's missing findings.
-- The attempts are kind_attempts for every registered kind (gateway.domain.attempt_kinds).
SELECT a.kind, a.attempt_id, a.provider_id, a.client_reference, a.amount_minor, a.currency, a.sent_at
  FROM ({attempts_by_kind}) a
 WHERE a.provider_account = %(provider_account)s AND a.state = 'Succeeded' AND a.kind = ANY(%(kinds)s)
   AND a.sent_at >= %(window_from)s AND a.sent_at < %(before)s
   AND NOT EXISTS (SELECT 1 FROM reconciliation_findings f
                    WHERE f.run_id = %(run_id)s AND f.kind = a.kind
                      AND f.provider_object_id = COALESCE(a.provider_id, a.client_reference))
 ORDER BY a.sent_at, a.attempt_id;

-- name: kind_attempts
-- One kind's attempts as a run compares them with a listing ({provider_id} its provider-id
-- column, {sent_at} its send column); composed for every registered kind.
SELECT {kind}::text AS kind, attempt_id, {provider_id} AS provider_id, client_reference, amount_minor, currency,
       {sent_at} AS sent_at, provider_account, state
  FROM {attempts}

-- name: list_runs
-- The runs, by request time (docs/decisions/0036; gateway/store/keyset.py binds {beyond} and
-- {direction}), optionally of one account or in one state.
SELECT * FROM reconciliation_runs
 WHERE (%(provider_account)s::text IS NULL OR provider_account = %(provider_account)s::text)
   AND (%(state)s::text IS NULL OR state = %(state)s::text)
   AND (%(cursor_at)s::timestamptz IS NULL
        OR (requested_at, run_id) {beyond} (%(cursor_at)s::timestamptz, %(cursor_id)s::uuid))
 ORDER BY requested_at {direction}, run_id {direction}
 LIMIT %(limit)s;

-- name: findings_of_run
-- A run's findings a person may act on (every class but matched), in the order found.
SELECT kind, provider_object_id, class, attempt_id, details, found_at
  FROM reconciliation_findings
 WHERE run_id = %(run_id)s AND class <> 'matched'
 ORDER BY found_at, kind, provider_object_id
 LIMIT %(limit)s;

-- name: lock_schedule
-- One scheduler at a time per account, for the transaction (two clock wake-ups on two workers).
SELECT pg_advisory_xact_lock(hashtext('paygate-reconciliation-schedule'), hashtext(%(provider_account)s));

-- name: start_scheduled
-- The clock's run of the account, unless one was started within the interval.
INSERT INTO reconciliation_runs (run_id, provider_account, window_from, window_to, state, started_by, requested_at)
SELECT %(run_id)s, %(provider_account)s, %(window_from)s, %(now)s, 'Running', 'clock', %(now)s
 WHERE NOT EXISTS (SELECT 1 FROM reconciliation_runs
                    WHERE provider_account = %(provider_account)s AND started_by = 'clock'
                      AND requested_at > %(now)s::timestamptz - make_interval(secs => %(interval_s)s))
RETURNING *;

-- name: running_runs
-- Runs still Running, oldest first: each wake-up of the worker continues them.
SELECT run_id FROM reconciliation_runs WHERE state = 'Running' ORDER BY requested_at, run_id LIMIT %(limit)s;

-- name: last_finished
-- /metrics: per configured account, when its last run finished, else when it was registered.
SELECT a.provider_account,
       COALESCE(max(r.finished_at) FILTER (WHERE r.state = 'Finished'), a.registered_at) AS since
  FROM provider_accounts a
  LEFT JOIN reconciliation_runs r ON r.provider_account = a.provider_account
 WHERE a.provider_account = ANY(%(accounts)s)
 GROUP BY a.provider_account, a.registered_at;
