-- Fleet-wide metric counters and the decision-counting triggers (issue 15 item 3,
-- docs/decisions/0040, 0041), and the index /metrics counts open dead letters with. Backward
-- compatible: a new table; the triggers also count the decisions the previous release writes
-- (an insert into metric_counters in the deciding transaction, which cannot fail on its labels);
-- the index changes no statement's meaning. IF NOT EXISTS on the index: on a large outbox, build
-- it CONCURRENTLY by hand before deploying (docs/migrations.md), and this migration only records it.

CREATE TABLE metric_counters (
    name              text        NOT NULL,  -- the sample name: '<counter>_total', '<histogram>_bucket', ...
    labels            jsonb       NOT NULL,  -- {"kind": "payout", "reason": "grant.expired"}
    value             float8      NOT NULL,
    PRIMARY KEY (name, labels),
    CONSTRAINT ck_metric_counter_value CHECK (value >= 0)
);

-- A decision is a row: the database counts it in the deciding transaction, so the count commits
-- (or rolls back) with the decision itself, under the attempt kind the table decides for.
CREATE FUNCTION paygate_count_decision() RETURNS trigger
    LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO metric_counters (name, labels, value)
    VALUES ('paygate_payout_decisions_total',
            jsonb_build_object('kind', CASE TG_TABLE_NAME WHEN 'payout_decisions' THEN 'payout'
                                                          WHEN 'payout_recall_decisions' THEN 'payout_recall'
                                                          WHEN 'payment_refund_decisions' THEN 'payment_refund' END,
                               'outcome', NEW.outcome,
                               'reason', CASE WHEN NEW.reason ~ '^[a-z]+([._-][a-z]+)*$' AND length(NEW.reason) <= 64
                                              THEN NEW.reason ELSE 'other' END),
            1)
    ON CONFLICT (name, labels) DO UPDATE SET value = metric_counters.value + 1;
    RETURN NULL;
END;
$$;

CREATE TRIGGER payout_decisions_counted
    AFTER INSERT ON payout_decisions
    FOR EACH ROW EXECUTE FUNCTION paygate_count_decision();

CREATE TRIGGER payout_recall_decisions_counted
    AFTER INSERT ON payout_recall_decisions
    FOR EACH ROW EXECUTE FUNCTION paygate_count_decision();

CREATE TRIGGER payment_refund_decisions_counted
    AFTER INSERT ON payment_refund_decisions
    FOR EACH ROW EXECUTE FUNCTION paygate_count_decision();

-- /metrics counts the dead letters nobody has retried or discarded yet, per message kind.
CREATE INDEX IF NOT EXISTS outbox_messages_dead
    ON outbox_messages (kind)
    WHERE dead_lettered_at IS NOT NULL AND discarded_at IS NULL;
