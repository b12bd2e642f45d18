-- wrk script for bench/outbox.py's sink ceiling: the same POST the dispatcher sends (a JSON body
-- with a dedup key), to /merchant.
wrk.method = "POST"
wrk.path = "/sinkload"
wrk.headers["Content-Type"] = "application/json"
wrk.body = '{"attempt_id":null,"dedup_key":"sinkload","escalation_id":null,"kind":"order-confirmation","payload":{"position":1}}'
