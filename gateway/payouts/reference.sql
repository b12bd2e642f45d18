-- Reference data (API.md, Payouts): admin upserts. A version moves only when a field that policy
-- or the claim fence reads actually changes, so an idempotent PUT rolls no queued claim back.

-- name: upsert_tenant
INSERT INTO tenants (tenant_id, daily_limit_minor, currency, payouts_suspended, settlement_time_zone, updated_at)
VALUES (%(tenant_id)s, %(daily_limit_minor)s, %(currency)s, %(payouts_suspended)s, %(settlement_time_zone)s, %(now)s)
ON CONFLICT (tenant_id) DO UPDATE
   SET daily_limit_minor = EXCLUDED.daily_limit_minor,
       currency = EXCLUDED.currency,
       payouts_suspended = EXCLUDED.payouts_suspended,
       settlement_time_zone = EXCLUDED.settlement_time_zone,
       settings_version = tenants.settings_version
           + CASE WHEN (tenants.daily_limit_minor, tenants.currency, tenants.payouts_suspended,
                        tenants.settlement_time_zone)
                       IS DISTINCT FROM (EXCLUDED.daily_limit_minor, EXCLUDED.currency,
                                         EXCLUDED.payouts_suspended, EXCLUDED.settlement_time_zone)
                  THEN 1 ELSE 0 END,
       updated_at = EXCLUDED.updated_at
RETURNING tenant_id, daily_limit_minor, currency, payouts_suspended, settlement_time_zone,
          settings_version AS version;

-- name: upsert_beneficiary
INSERT INTO beneficiaries (beneficiary_id, tenant_id, verified, status, updated_at)
VALUES (%(beneficiary_id)s, %(tenant_id)s, %(verified)s, %(status)s, %(now)s)
ON CONFLICT (beneficiary_id) DO UPDATE
   SET tenant_id = EXCLUDED.tenant_id,
       verified = EXCLUDED.verified,
       status = EXCLUDED.status,
       version = beneficiaries.version
           + CASE WHEN (beneficiaries.tenant_id, beneficiaries.verified, beneficiaries.status)
                       IS DISTINCT FROM (EXCLUDED.tenant_id, EXCLUDED.verified, EXCLUDED.status)
                  THEN 1 ELSE 0 END,
       updated_at = EXCLUDED.updated_at
RETURNING beneficiary_id, tenant_id, verified, status, version;

-- name: lock_destination
-- Held until the upsert commits, so the version read here is the one the upsert replaces.
SELECT version FROM destinations WHERE destination_id = %(destination_id)s FOR UPDATE;

-- name: upsert_destination
-- changed_at is the registration or last change: what "recently changed" (< 7 days) measures.
-- The token is written, never returned.
INSERT INTO destinations (destination_id, beneficiary_id, provider_token, changed_at)
VALUES (%(destination_id)s, %(beneficiary_id)s, %(provider_token)s, %(now)s)
ON CONFLICT (destination_id) DO UPDATE
   SET beneficiary_id = EXCLUDED.beneficiary_id,
       provider_token = EXCLUDED.provider_token,
       version = destinations.version
           + CASE WHEN (destinations.beneficiary_id, destinations.provider_token)
                       IS DISTINCT FROM (EXCLUDED.beneficiary_id, EXCLUDED.provider_token)
                  THEN 1 ELSE 0 END,
       changed_at = CASE WHEN (destinations.beneficiary_id, destinations.provider_token)
                              IS DISTINCT FROM (EXCLUDED.beneficiary_id, EXCLUDED.provider_token)
                         THEN EXCLUDED.changed_at ELSE destinations.changed_at END
RETURNING destination_id, beneficiary_id, version, changed_at;

-- name: bump_payouts_of_destination
-- Seed 000: "Any later edit, cancellation, or destination change moves a version". A payout that
-- is Draft or Approved moves with its destination, so a queued grant (which expects the old
-- version) is refused payout.not-executable. Executing payouts are past the claim: not recalled.
UPDATE payouts
   SET version = version + 1, updated_at = %(now)s
 WHERE destination_id = %(destination_id)s AND state IN ('Draft', 'Approved')
RETURNING payout_id, state, version;

-- name: publish_policy
INSERT INTO policy_releases (operation, current_version, published_at)
VALUES (%(operation)s, %(version)s, %(now)s)
ON CONFLICT (operation) DO UPDATE
   SET current_version = EXCLUDED.current_version,
       published_at = CASE WHEN policy_releases.current_version = EXCLUDED.current_version
                           THEN policy_releases.published_at ELSE EXCLUDED.published_at END
RETURNING operation, current_version AS version, published_at;
