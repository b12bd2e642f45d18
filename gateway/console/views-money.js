// Console views of payouts, recalls, refunds and stored notifications.
// Nothing here can show a destination token or a payment method: the API never returns them.
import {
  api, attemptLink, badge, el, fields, formAction, kv, listView, money, noteAction, payoutLink, refundLink,
  table, text, when,
} from "./core.js";

const PAYOUT_STATES = ["Unknown", "Executing", "Approved", "Draft", "Paid", "Failed", "Cancelled"];
const PIPELINE_STATES = ["Unknown", "Started", "Claimed", "Succeeded", "Failed", "NotStarted", "NotApplied"];

// Who may give the act a payout waits for: the tenant's clerks the approve/acknowledge rule allows.
function whoMayAct(awaiting) {
  if (!awaiting) return "—";
  return el("div", { class: "who" },
    awaiting.clerks.length
      ? el("ul", { class: "plain" }, awaiting.clerks.map((subject) => el("li", { class: "mono" }, subject)))
      : el("span", { class: "error" }, "Nobody: no clerk token qualifies"),
    el("div", { class: "muted small" }, awaiting.rule));
}

const awaitingColumns = () => [
  ["Payout", (r) => payoutLink(r.payout_id)],
  ["Tenant", (r) => r.tenant_id, "mono"],
  ["Amount", (r) => money(r.amount_minor, r.currency), "num"],
  ["Requested by", (r) => r.requester_id, "mono"],
  ["Waiting for", (r) => [badge(r.awaiting ? r.awaiting.action : r.decision.outcome), " ",
    el("span", { class: "muted" }, r.decision.reason)]],
  ["Decided", (r) => when(r.decision.decided_at), "mono"],
  ["Release at", (r) => when(r.release_at), "mono"],
  ["Who may act", (r) => whoMayAct(r.awaiting)],
];

const payoutColumns = () => [
  ["Payout", (r) => payoutLink(r.payout_id)],
  ["Tenant", (r) => r.tenant_id, "mono"],
  ["Amount", (r) => money(r.amount_minor, r.currency), "num"],
  ["State", (r) => badge(r.state)],
  ["Latest attempt", (r) => (r.attempt ? [`#${r.attempt.attempt_number} `, badge(r.attempt.state)] : "—")],
  ["Reference", (r) => text(r.attempt && r.attempt.client_reference), "mono"],
  ["Provider payout", (r) => text(r.attempt && r.attempt.provider_payout_id), "mono"],
  ["Sends / checks", (r) => (r.attempt ? `${r.attempt.sends} / ${r.attempt.checks}` : "—"), "num"],
  ["Next check", (r) => when(r.attempt && r.attempt.next_check_at), "mono"],
  ["Escalation deadline", (r) => when(r.attempt && r.attempt.escalation_deadline), "mono"],
  ["Created", (r) => when(r.created_at), "mono"],
];

const awaitingList = listView({
  title: "Payouts awaiting a person", path: "/v1/ops/payout-approvals", columns: awaitingColumns,
  intro: "Draft payouts whose latest decision needs an acknowledgment or an approval (seed 000). These are " +
    "clerks' acts: the console names who may give them. Approval is a decision, not a payment.",
});

const stateLists = Object.fromEntries(PAYOUT_STATES.map((state) => [state, listView({
  title: `Payouts: ${state}`, path: "/v1/ops/payouts", filters: { state }, columns: payoutColumns,
  intro: state === "Unknown" ? "Nobody knows yet whether these payouts took effect; the reconciler keeps " +
    "looking. No new attempt is possible until each is resolved." : undefined,
})]));

export async function payouts(params, ctx) {
  const state = params.get("state") || "awaiting";
  const tabs = el("nav", { class: "tabs" }, ["awaiting", ...PAYOUT_STATES].map((s) => el("a", {
    href: `#payouts?state=${s}`, class: s === state ? "active" : undefined,
  }, s === "awaiting" ? "Awaiting a person" : s)));
  const view = state === "awaiting" ? awaitingList : stateLists[state] || stateLists.Unknown;
  return el("div", {}, tabs, await view(state === "awaiting" ? new URLSearchParams() : params, ctx));
}

const decisionColumns = [
  ["Decision", (d) => d.decision_id, "mono"],
  ["Outcome", (d) => badge(d.outcome)],
  ["Reason", (d) => d.reason],
  ["Policy", (d) => text(d.policy_version), "mono"],
  ["By", (d) => d.actor_id, "mono"],
  ["When", (d) => when(d.observed_at), "mono"],
];

const attemptColumns = (numberField, providerField) => [
  ["#", (a) => a[numberField], "num"],
  ["Attempt", (a) => a.attempt_id, "mono"],
  ["State", (a) => badge(a.state)],
  ["Reference", (a) => a.client_reference, "mono"],
  ["Provider id", (a) => text(a[providerField]), "mono"],
  ["Provider status", (a) => text(a.provider_status)],
  ["Reason", (a) => text(a.outcome_reason)],
  ["Sends", (a) => a.sends, "num"],
  ["Claimed", (a) => when(a.claimed_at), "mono"],
  ["Resolved", (a) => when(a.resolved_at), "mono"],
  ["Effect", (a) => (a.effect ? badge(a.effect.protocol_state) : "—")],
];

const historyTable = (events) => table([
  ["#", (e) => e.event_id, "mono"],
  ["When", (e) => when(e.occurred_at), "mono"],
  ["Kind", (e) => badge(e.kind)],
  ["Actor", (e) => e.actor, "mono"],
  ["Detail", (e) => kv(e.detail)],
], events);

export async function payout(params, ctx, id) {
  const p = await api(`/v1/ops/payouts/${encodeURIComponent(id)}`);
  const grants = table([
    ["Grant", (g) => g.grant_id, "mono"],
    ["#", (g) => g.attempt_number, "num"],
    ["State", (g) => badge(g.state)],
    ["Not before", (g) => when(g.not_before), "mono"],
    ["Expires", (g) => when(g.expires_at), "mono"],
    ["Revoked", (g) => (g.revoked_at ? [when(g.revoked_at), ` ${g.revoke_reason}`] : "—")],
    ["", (g) => (g.state === "Issued" ? noteAction("Revoke grant", "danger", (reason) => api(
      `/v1/grants/${g.grant_id}/revoke`, { method: "POST", body: { reason } }), ctx.refresh,
    "Why (a finance hold, say): required") : ""), "actions"],
  ], p.grants);
  return el("div", {},
    el("p", {}, el("a", { href: `#payouts?state=${p.awaiting ? "awaiting" : p.state}` }, "← payouts")),
    el("h2", {}, "Payout ", el("span", { class: "mono" }, p.payout_id), " ", badge(p.state)),
    p.awaiting ? el("div", { class: "callout" }, el("strong", {}, `Waiting for: ${p.awaiting.action}. `),
      "Who may act: ", p.awaiting.clerks.length ? p.awaiting.clerks.join(", ") : "nobody (no clerk token qualifies)",
      el("div", { class: "muted small" }, p.awaiting.rule)) : null,
    fields({ ...p, amount: money(p.amount_minor, p.currency) },
      ["tenant_id", "requester_id", "beneficiary_id", "destination_id", "destination_version", "amount", "purpose",
        "release_at", "version", "created_at", "updated_at"]),
    el("h3", {}, `Decisions (${p.decisions.length}, oldest first)`), table(decisionColumns, p.decisions),
    el("h3", {}, `Grants (${p.grants.length})`), grants,
    el("h3", {}, `Attempts (${p.attempts.length})`), table(attemptColumns("attempt_number", "provider_payout_id"),
      p.attempts),
    p.recalls.decisions.length ? [
      el("h3", {}, "Recalls"), table(decisionColumns, p.recalls.decisions),
      table(attemptColumns("recall_number", "provider_recall_id"), p.recalls.attempts)] : null,
    el("h3", {}, `History (${p.history.length} events, oldest first)`), historyTable(p.history));
}

export const recalls = listView({
  title: "Payout recalls", path: "/v1/ops/recalls", states: PIPELINE_STATES, initial: "Unknown",
  intro: "A recall is its own operation with its own decision and attempts; an Unknown one is reconciled " +
    "like a payout, never sent again blindly.",
  columns: () => [
    ["Recall attempt", (r) => r.attempt_id, "mono"],
    ["Payout", (r) => payoutLink(r.payout_id)],
    ["Tenant", (r) => r.tenant_id, "mono"],
    ["#", (r) => r.recall_number, "num"],
    ["State", (r) => badge(r.state)],
    ["Amount", (r) => money(r.amount_minor, r.currency), "num"],
    ["Reference", (r) => r.client_reference, "mono"],
    ["Provider recall", (r) => text(r.provider_recall_id), "mono"],
    ["Sends / checks", (r) => `${r.sends} / ${r.checks}`, "num"],
    ["Next check", (r) => when(r.next_check_at), "mono"],
    ["Escalation deadline", (r) => when(r.escalation_deadline), "mono"],
    ["Claimed", (r) => when(r.claimed_at), "mono"],
  ],
});

// "Apply to attempt": the operator names the attempt (a candidate fills it in); the API applies
// the stored notification through the ordinary conditional transition, once.
function applyAction(n, refresh) {
  return formAction("Apply to attempt", "", () => {
    const input = el("input", { type: "text", required: true, pattern: "[0-9a-fA-F-]{36}", spellcheck: "false",
      placeholder: "attempt id", "aria-label": "attempt id", class: "mono" });
    const picks = n.candidates.map((id) => el("button", { type: "button", class: "link mono",
      onclick: () => { input.value = id; } }, id));
    return { nodes: [input, picks.length ? el("div", { class: "small" }, "Candidates: ", picks) : null],
      get value() { return input.value.trim(); } };
  }, async (controls) => {
    const applied = await api(`/v1/ops/notifications/${n.notification_event_id}/apply`,
      { method: "POST", body: { attempt_id: controls.value } });
    sessionStorage.setItem("paygate.lastApplied", JSON.stringify(applied));
  }, refresh);
}

function lastApplied() {
  const saved = sessionStorage.getItem("paygate.lastApplied");
  if (!saved) return null;
  sessionStorage.removeItem("paygate.lastApplied");
  const a = JSON.parse(saved);
  return el("p", { class: "notice", role: "status" }, `Notification ${a.notification_event_id} applied: attempt `,
    attemptLink(a.attempt_id), ` is now ${a.state}`,
    a.resolved_escalations.length ? `; escalation ${a.resolved_escalations.join(", ")} resolved.` : ".");
}

const notificationList = listView({
  title: "Stored notifications no attempt took", path: "/v1/ops/notifications", states: ["unmatched", "applied", "all"],
  initial: "unmatched",
  intro: "Verified notifications the gateway stored and escalated because no single attempt matched them. " +
    "Applying one runs the ordinary conditional transition once; it is never re-delivered.",
  columns: (refresh) => [
    ["#", (n) => n.notification_event_id, "mono"],
    ["Received", (n) => when(n.received_at), "mono"],
    ["Problem", (n) => badge(n.problem)],
    ["Type", (n) => text(n.type)],
    ["Event / account", (n) => [text(n.provider_event_id), el("div", { class: "muted small" }, n.provider_account)],
      "mono"],
    ["Reference", (n) => text(n.client_reference), "mono"],
    ["Provider id", (n) => text(n.provider_object_id), "mono"],
    ["Amount", (n) => money(n.amount_minor, n.currency), "num"],
    ["Status", (n) => text(n.status || n.unreadable)],
    ["Applied", (n) => (n.applied_to ? [attemptLink(n.applied_to), " by ", n.applied_by, " ", when(n.applied_at)] : "—")],
    ["", (n) => (n.applicable ? applyAction(n, refresh)
      : n.applied_to ? "" : el("span", { class: "muted small" }, n.object === "payment" || !n.object
        ? "unreadable: nothing to apply; resolve its escalation once explained"
        : "only payment notifications apply here; a payout's or recall's is settled by its reconciler's lookup")),
    "actions"],
  ],
});

export async function notifications(params, ctx) {
  const shown = lastApplied();
  const list = await notificationList(params, ctx);
  if (shown) list.prepend(shown);
  return list;
}

export const refunds = listView({
  title: "Refunds", path: "/v1/ops/refunds",
  states: ["all", "Requested", "Unknown", "Started", "Claimed", "Succeeded", "Failed", "NotStarted", "NotApplied",
    "Expired"], initial: "all",
  intro: "Refunds of paid orders: each its own decision, grant and attempts. Requested means the grant " +
    "waits for a worker; Unknown means nobody knows yet whether the refund took effect.",
  columns: () => [
    ["Order", (r) => refundLink(r.order_id)],
    ["#", (r) => r.refund_number, "num"],
    ["State", (r) => badge(r.state)],
    ["Cause", (r) => r.cause],
    ["Amount", (r) => money(r.amount_minor, r.currency), "num"],
    ["Order state", (r) => badge(r.order_state)],
    ["Requested", (r) => [when(r.requested_at), el("div", { class: "muted small" }, r.requested_by)], "mono"],
    ["Reference", (r) => text(r.client_reference), "mono"],
    ["Provider refund", (r) => text(r.provider_refund_id), "mono"],
    ["Reason", (r) => text(r.outcome_reason)],
    ["Next check", (r) => when(r.next_check_at), "mono"],
  ],
});

export async function refund(params, ctx, orderId) {
  const r = await api(`/v1/ops/refunds/${encodeURIComponent(orderId)}`);
  return el("div", {},
    el("p", {}, el("a", { href: "#refunds" }, "← refunds")),
    el("h2", {}, "Refunds of order ", el("span", { class: "mono" }, r.order.order_id), " ",
      badge(r.refund ? r.refund.state : "none")),
    fields({ ...r.order, amount: money(r.order.amount_minor, r.order.currency) }, ["merchant_id", "customer_id",
      "amount", "provider_account", "state", "created_at", "updated_at"]),
    el("h3", {}, `Decisions (${r.refunds.decisions.length}, oldest first)`), table([
      ["Decision", (d) => d.decision_id, "mono"],
      ["Cause", (d) => d.cause],
      ["Outcome", (d) => badge(d.outcome)],
      ["Reason", (d) => d.reason],
      ["By", (d) => d.actor_id, "mono"],
      ["When", (d) => when(d.observed_at), "mono"],
    ], r.refunds.decisions),
    el("h3", {}, `Attempts (${r.refunds.attempts.length})`),
    table(attemptColumns("refund_number", "provider_refund_id"), r.refunds.attempts),
    el("h3", {}, `History (${r.history.length} events, oldest first)`), historyTable(r.history));
}
