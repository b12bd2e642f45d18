// Console views of checkout operations: escalations, payment attempts, the outbox, health.
import {
  api, attemptLink, badge, el, fields, kv, listView, money, noteAction, plainAction, table, text, when,
} from "./core.js";

export const escalations = listView({
  title: "Escalations", path: "/v1/ops/escalations", states: ["open", "acknowledged", "resolved", "all"],
  initial: "open",
  intro: "Open episodes remind until resolved. Resolving closes the episode; it never changes a payment.",
  columns: (refresh) => [
    ["#", (r) => r.escalation_id, "mono"],
    ["Reason", (r) => badge(r.reason)],
    ["Key", (r) => r.escalation_key, "mono"],
    ["Attempt", (r) => attemptLink(r.attempt_id)],
    ["Raised", (r) => when(r.raised_at), "mono"],
    ["Acknowledged", (r) => when(r.acknowledged_at), "mono"],
    ["Reminders", (r) => r.reminder_count],
    ["Resolved", (r) => when(r.resolved_at), "mono"],
    ["Details", (r) => kv(r.details)],
    ["", (r) => (r.resolved_at ? "" : [
      r.acknowledged_at ? null : plainAction("Acknowledge", "secondary",
        () => api(`/v1/ops/escalations/${r.escalation_id}/acknowledge`, { method: "POST" }), refresh),
      noteAction("Resolve", "", (note) => api(`/v1/ops/escalations/${r.escalation_id}/resolve`,
        { method: "POST", body: { note } }), refresh),
    ]), "actions"],
  ],
});

export const attempts = listView({
  title: "Payment attempts", path: "/v1/ops/attempts",
  states: ["all", "Unknown", "Started", "NotStarted", "Succeeded", "Failed", "NotApplied"], initial: "all",
  intro: "Every recent attempt, newest first; pick a state beside it. Unknown means nobody knows yet " +
    "whether the payment took effect: recovery keeps looking.",
  columns: () => [
    ["Attempt", (r) => attemptLink(r.attempt_id)],
    ["Order", (r) => r.order_id, "mono"],
    ["Reference", (r) => r.client_reference, "mono"],
    ["Account", (r) => r.provider_account, "mono"],
    ["Amount", (r) => money(r.amount_minor, r.currency), "num"],
    ["State", (r) => badge(r.state)],
    ["Reason", (r) => text(r.outcome_reason)],
    ["Created", (r) => when(r.created_at), "mono"],
    ["Escalation deadline", (r) => when(r.escalation_deadline), "mono"],
    ["Next check", (r) => when(r.next_check_at), "mono"],
    ["Lease", (r) => (r.recovery_owner ? `${r.recovery_owner} until ${r.lease_expires_at}` : "—"), "mono"],
  ],
});

export async function attempt(params, ctx, id) {
  const history = await api(`/v1/ops/attempts/${encodeURIComponent(id)}`);
  const a = history.attempt;
  return el("div", {},
    el("p", {}, el("a", { href: `#attempts?state=${encodeURIComponent(a.state)}` }, `← ${a.state} attempts`)),
    el("h2", {}, "Attempt ", el("span", { class: "mono" }, a.attempt_id), " ", badge(a.state)),
    fields(a, Object.keys(a)),
    el("h3", {}, `History (${history.events.length} events, oldest first)`),
    table([
      ["#", (e) => e.event_id, "mono"],
      ["When", (e) => when(e.occurred_at), "mono"],
      ["Kind", (e) => badge(e.kind)],
      ["Actor", (e) => e.actor, "mono"],
      ["Notification key", (e) => text(e.notification_key), "mono"],
      ["Detail", (e) => kv(e.detail)],
    ], history.events));
}

export const outbox = listView({
  title: "Outbox", path: "/v1/ops/outbox", states: ["pending", "dead", "dispatched", "discarded"], initial: "pending",
  intro: "A dead-lettered effect blocks its attempt's later effects until it is retried or discarded.",
  columns: (refresh) => [
    ["#", (r) => r.message_id, "mono"],
    ["Kind", (r) => r.kind],
    ["Dedup key", (r) => r.dedup_key, "mono"],
    ["Attempt", (r) => attemptLink(r.attempt_id)],
    ["Tries", (r) => r.delivery_attempts],
    ["Next try", (r) => when(r.next_attempt_at), "mono"],
    ["Last error", (r) => text(r.last_error)],
    ["Blocked by", (r) => text(r.blocked_by), "mono"],
    ["Dead since", (r) => when(r.dead_lettered_at), "mono"],
    ["Dispatched", (r) => when(r.dispatched_at), "mono"],
    ["Discarded", (r) => (r.discarded_at ? `${r.discarded_at} by ${r.discarded_by}: ${r.discard_note}` : "—")],
    ["", (r) => (r.dispatched_at || r.discarded_at || !(r.dead_lettered_at || r.delivery_attempts > 0) ? "" : [
      plainAction("Retry", "secondary", () => api(`/v1/ops/outbox/${r.message_id}/retry`, { method: "POST" }), refresh),
      r.dead_lettered_at ? noteAction("Discard", "danger", (note) => api(`/v1/ops/outbox/${r.message_id}/discard`,
        { method: "POST", body: { note } }), refresh) : null,
    ]), "actions"],
  ],
});

// Prometheus text: `name{labels} value` lines of the gauges the gateway reads from the database.
function gauges(metricsText) {
  const found = {};
  for (const line of metricsText.split("\n")) {
    const match = /^(paygate_[a-z_]+)(?:\{([^}]*)\})? ([0-9.eE+-]+|NaN)$/.exec(line);
    if (match) (found[match[1]] = found[match[1]] || []).push({ labels: match[2] || "", value: Number(match[3]) });
  }
  return found;
}

export async function health() {
  const [alive, ready, metricsText] = await Promise.all([
    api("/healthz").catch((e) => ({ status: e.message })),
    fetch("/readyz", { cache: "no-store" }).then((r) => r.json()),
    api("/metrics"),
  ]);
  const g = gauges(metricsText);
  const card = (title, value, detail) => el("div", { class: "card" }, el("div", { class: "muted" }, title),
    el("div", { class: "big" }, value), detail);
  const rows = (name) => table([["Labels", (r) => r.labels || "—", "mono"], ["Value", (r) => r.value, "mono"]],
    g[name] || []);
  return el("div", {},
    el("h2", {}, "Health and metrics"),
    el("div", { class: "cards" },
      card("Process (/healthz)", badge(alive.status)),
      card("Ready (/readyz)", badge(ready.status === "ready" ? "ok" : "unavailable"), kv(ready.checks)),
      card("Open escalations", text((g.paygate_open_escalations || [{}])[0].value))),
    el("h3", {}, "Payment attempts by state"), rows("paygate_payment_attempts"),
    el("h3", {}, "Outbox messages by delivery state"), rows("paygate_outbox_messages"),
    el("h3", {}, "Seconds since each process kind's freshest heartbeat"), rows("paygate_process_last_seen_age_seconds"));
}
