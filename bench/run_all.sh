#!/usr/bin/env bash
# Every benchmark with its figures in JSON (bench/README.md, "The recorded run").
# Run as root on a quiet machine (nothing else running: `uptime` is printed before and after).
#   bench/run_all.sh [OUT_DIR]        # default bench/results/<UTC time>
# Needs wrk and PostgreSQL 15's binaries (apt-get install -y wrk postgresql-15), the repository's
# virtualenv (.venv, `pip install -e '.[test]'`); peer_djstripe.py makes /tmp/djstripe-venv itself.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-.venv/bin/python}
OUT=${1:-bench/results/$(date -u +%Y%m%dT%H%M%SZ)}
mkdir -p "$OUT"
command -v wrk >/dev/null || { apt-get update -qq && apt-get install -y -qq wrk; }
{ date -u; uptime; nproc; } | tee "$OUT/machine.txt"
"$PY" bench/notifications.py --duration 20 --json "$OUT/notifications.json" | tee "$OUT/notifications.txt"
# The ingest and checkout targets: the median of five runs, each against its own ceiling, every
# run kept (docs/decisions/0087); the ingest row on the path production takes (--certified). The
# first run's own JSON keeps the file name a single run had.
"$PY" bench/runs.py --runs 5 --keep "$OUT/notifications_certified_runs" --json "$OUT/notifications_certified_runs.json" -- --certified \
    --mixes unique --connections 16 --duration 15 | tee "$OUT/notifications_certified.txt"
cp "$OUT/notifications_certified_runs/notifications-1.json" "$OUT/notifications_certified.json"
"$PY" bench/runs.py --bench checkout --runs 5 --keep "$OUT/checkout_runs" --json "$OUT/checkout_runs.json" -- --duration 20 \
    | tee "$OUT/checkout.txt"
cp "$OUT/checkout_runs/checkout-1.json" "$OUT/checkout.json"
"$PY" bench/recovery.py --json "$OUT/recovery.json" | tee "$OUT/recovery.txt"
"$PY" bench/outbox.py --json "$OUT/outbox.json" | tee "$OUT/outbox.txt"
"$PY" bench/peer_djstripe.py --duration 20 --json "$OUT/peer_djstripe.json" | tee "$OUT/peer_djstripe.txt"
{ date -u; uptime; } | tee -a "$OUT/machine.txt"
