-- Every episode of an escalation key, open or resolved (issue 21 item 2): the pipeline's
-- reconciler escalates an attempt past its escalation deadline without a lookup, once, and asks
-- for every round whether that deadline was ever escalated (rows.sql overdue_unescalated);
-- one_open_escalation_per_key holds open episodes only, so without this index the question would
-- read every episode ever raised. Backward compatible: an index changes no statement's meaning.

CREATE INDEX payment_escalations_by_key ON payment_escalations (escalation_key);
