-- The payout aggregate: the record, its reservation on the tenant's daily totals, its history and
-- the context policy reads. Every statement that compares or stamps time takes %(now)s.

-- name: insert_payout
-- Idempotent create: a repeated POST finds the existing row and compares its terms.
INSERT INTO payouts (payout_id, tenant_id, requester_id, beneficiary_id, destination_id, destination_version,
                     amount_minor, currency, purpose, release_at, state, correlation_id, created_at, updated_at)
SELECT %(payout_id)s, %(tenant_id)s, %(requester_id)s, %(beneficiary_id)s, d.destination_id, d.version,
       %(amount_minor)s, %(currency)s, %(purpose)s, %(release_at)s, 'Draft', %(correlation_id)s, %(now)s, %(now)s
  FROM destinations d
 WHERE d.destination_id = %(destination_id)s
ON CONFLICT (payout_id) DO NOTHING
RETURNING *;

-- name: get_payout
SELECT * FROM payouts WHERE payout_id = %(payout_id)s;

-- name: lock_payout
-- Decisions on one payout serialize here: the attempt number they allocate is then atomic.
SELECT * FROM payouts WHERE payout_id = %(payout_id)s FOR UPDATE;

-- name: context
-- Everything policy reads, in one snapshot. A missing tenant, beneficiary, destination or policy
-- release comes back as NULLs: the context is unavailable and the verdict Deferred. The daily
-- totals are those of the release date in the tenant's settlement time zone.
SELECT p.payout_id, p.tenant_id, p.requester_id, p.beneficiary_id, p.destination_id, p.destination_version,
       p.amount_minor, p.currency, p.purpose, p.state, p.version, p.reserved_for,
       t.payouts_suspended, t.daily_limit_minor, t.settings_version,
       (p.release_at AT TIME ZONE t.settlement_time_zone)::date AS settlement_date,
       COALESCE(tot.paid_minor, 0) AS paid_minor, COALESCE(tot.reserved_minor, 0) AS reserved_minor,
       b.tenant_id AS beneficiary_tenant_id, b.verified, b.status AS beneficiary_status,
       b.version AS beneficiary_version,
       d.beneficiary_id AS destination_beneficiary_id, d.version AS current_destination_version,
       d.changed_at AS destination_changed_at,
       r.current_version AS policy_version,
       EXISTS (SELECT 1 FROM payout_attempts a
                WHERE a.payout_id = p.payout_id AND a.state IN ('Claimed', 'Started', 'Unknown'))
           AS has_unresolved_attempt,
       EXISTS (SELECT 1 FROM payout_grants g
                WHERE g.payout_id = p.payout_id AND g.state = 'Issued' AND g.expires_at > %(now)s)
           AS has_live_grant,
       EXISTS (SELECT 1 FROM payout_acknowledgments k
                WHERE k.payout_id = p.payout_id AND k.reason_code = 'destination.recently-changed'
                  AND k.destination_version = d.version)
           AS destination_change_acknowledged
  FROM payouts p
  LEFT JOIN tenants t ON t.tenant_id = p.tenant_id
  LEFT JOIN tenant_daily_totals tot
         ON tot.tenant_id = p.tenant_id
        AND tot.settlement_date = (p.release_at AT TIME ZONE t.settlement_time_zone)::date
  LEFT JOIN beneficiaries b ON b.beneficiary_id = p.beneficiary_id
  LEFT JOIN destinations d ON d.destination_id = p.destination_id
  LEFT JOIN policy_releases r ON r.operation = 'payout.submit'
 WHERE p.payout_id = %(payout_id)s;

-- name: ensure_daily_totals
INSERT INTO tenant_daily_totals (tenant_id, settlement_date)
VALUES (%(tenant_id)s, %(settlement_date)s)
ON CONFLICT (tenant_id, settlement_date) DO NOTHING;

-- name: reserve
-- The daily-limit reservation as a conditional update (seed 000, "One persistence sequence"):
-- concurrent reservers queue on this row, and each re-checks the condition against the row the
-- previous one committed, so two payouts cannot together exceed the limit.
UPDATE tenant_daily_totals d
   SET reserved_minor = d.reserved_minor + %(amount_minor)s
  FROM tenants t
 WHERE d.tenant_id = %(tenant_id)s AND d.settlement_date = %(settlement_date)s
   AND t.tenant_id = d.tenant_id
   AND d.paid_minor + d.reserved_minor + %(amount_minor)s <= t.daily_limit_minor
RETURNING d.paid_minor, d.reserved_minor;

-- name: release_reservation
-- Clears the payout's reservation and, in the same statement, gives it back to the day it was
-- made for (or moves it to paid). A payout without a reservation changes nothing, so a second
-- release is a no-op.
-- RETURNING shows the new row, so the day comes from the held row read (and locked) first.
WITH held AS (
    SELECT payout_id, tenant_id, reserved_for, amount_minor FROM payouts
     WHERE payout_id = %(payout_id)s AND reserved_for IS NOT NULL
       FOR UPDATE),
released AS (
    UPDATE payouts p SET reserved_for = NULL
      FROM held h WHERE p.payout_id = h.payout_id
    RETURNING h.tenant_id, h.reserved_for, h.amount_minor)
UPDATE tenant_daily_totals t
   SET reserved_minor = t.reserved_minor - r.amount_minor,
       paid_minor = t.paid_minor + CASE WHEN %(paid)s THEN r.amount_minor ELSE 0 END
  FROM released r
 WHERE t.tenant_id = r.tenant_id AND t.settlement_date = r.reserved_for
RETURNING t.settlement_date;

-- name: cancel_payout
-- Only before any attempt: Draft, or Approved with no attempt in flight. A queued grant stays
-- Issued and is refused payout.not-executable by the worker (seed 000, Trace C).
UPDATE payouts
   SET state = 'Cancelled', version = version + 1, updated_at = %(now)s
 WHERE payout_id = %(payout_id)s AND state IN ('Draft', 'Approved') AND reserved_for IS NULL
RETURNING state, version;

-- name: resolve_payout
-- The payout follows its active attempt's resolution; conditional on that attempt still being
-- the active one, so a stale writer cannot move a payout another attempt now owns. A payout
-- already in the state (Executing, for an attempt still Started) keeps its version.
UPDATE payouts
   SET state = %(state)s, version = version + 1, updated_at = %(now)s,
       active_attempt_id = CASE WHEN %(state)s IN ('Executing', 'Unknown') THEN active_attempt_id END
 WHERE payout_id = %(payout_id)s AND active_attempt_id = %(attempt_id)s AND state <> %(state)s
RETURNING state, version;

-- name: append_history
-- Append-only (trigger payout_history_append_only). Identifiers, amounts, currency and reason
-- codes only: never a destination token, credential or raw provider payload.
INSERT INTO payout_history (payout_id, attempt_id, decision_id, grant_id, kind, occurred_at, actor,
                            correlation_id, detail)
VALUES (%(payout_id)s, %(attempt_id)s, %(decision_id)s, %(grant_id)s, %(kind)s, %(now)s, %(actor)s,
        %(correlation_id)s, %(detail)s);

-- name: insert_acknowledgment
INSERT INTO payout_acknowledgments (payout_id, reason_code, destination_version, acknowledged_by, acknowledged_at)
SELECT p.payout_id, %(reason_code)s, d.version, %(actor)s, %(now)s
  FROM payouts p JOIN destinations d ON d.destination_id = p.destination_id
 WHERE p.payout_id = %(payout_id)s
RETURNING acknowledgment_id, destination_version;

-- name: history_of_payout
SELECT event_id, kind, occurred_at, actor, attempt_id, decision_id, grant_id, correlation_id, detail
  FROM payout_history WHERE payout_id = %(payout_id)s ORDER BY event_id;

-- name: certificate_attempt
-- The payout's latest succeeded attempt; a recall is a separate operation with its own attempts.
SELECT p.tenant_id, a.attempt_id
  FROM payouts p LEFT JOIN payout_attempts a ON a.payout_id = p.payout_id AND a.state = 'Succeeded'
 WHERE p.payout_id = %(payout_id)s
 ORDER BY a.attempt_number DESC NULLS LAST LIMIT 1;
