// paygate operator console (API.md "Operations": "A browser console under /console/ for operators").
// Vanilla JS, no build step, no external assets. Every value from the API is rendered as text
// (createElement + textContent), never parsed as HTML. The operator token lives in this tab's
// sessionStorage and is sent only to this gateway, as "Authorization: Bearer <token>".
"use strict";

const TOKEN_KEY = "paygate.operatorToken";
const PAGE = 50;

// ---------- DOM helpers: text only ----------

function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (name.startsWith("on")) node.addEventListener(name.slice(2), value);
    else node.setAttribute(name, value === true ? "" : String(value));
  }
  for (const child of children.flat()) {
    if (child === undefined || child === null) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

const text = (value) => (value === null || value === undefined ? "—" : String(value));
const badge = (value) => el("span", { class: `badge ${String(value).split(":")[0]}` }, text(value));
const json = (value) => el("pre", {}, JSON.stringify(value, null, 2));
const attemptLink = (id) => (id ? el("a", { href: `#attempt/${encodeURIComponent(id)}`, class: "mono" }, id) : "—");

function table(columns, rows) {
  return el("table", {},
    el("thead", {}, el("tr", {}, columns.map(([title]) => el("th", {}, title)))),
    el("tbody", {}, rows.length === 0
      ? el("tr", {}, el("td", { colspan: columns.length, class: "muted" }, "Nothing here."))
      : rows.map((row) => el("tr", {}, columns.map(([, cell, cls]) => el("td", { class: cls }, cell(row)))))));
}

function fields(object, names) {
  return el("dl", { class: "fields" }, names.flatMap((name) => [el("dt", {}, name), el("dd", {}, text(object[name]))]));
}

// ---------- the API ----------

class Problem extends Error {
  constructor(status, body) {
    super(body && body.title ? `${body.title}${body.detail ? ` (${body.detail})` : ""}` : `HTTP ${status}`);
    this.status = status;
    this.code = body && body.code;
  }
}

async function api(path, options = {}) {
  const headers = { Accept: "application/json" };
  const token = sessionStorage.getItem(TOKEN_KEY);
  if (token) headers.Authorization = `Bearer ${token}`;
  if (options.body !== undefined) headers["Content-Type"] = "application/json";
  const response = await fetch(path, {
    method: options.method || "GET", headers, credentials: "omit", cache: "no-store",
    body: options.body === undefined ? undefined : JSON.stringify(options.body),
  });
  const type = response.headers.get("content-type") || "";
  const body = type.includes("json") ? await response.json() : await response.text();
  if (!response.ok) {
    if (response.status === 401 && !options.signingIn) signOut("Your token was refused; sign in again.");
    throw new Problem(response.status, typeof body === "object" ? body : null);
  }
  return body;
}

const query = (params) => new URLSearchParams(Object.entries(params).filter(([, v]) => v !== undefined && v !== ""));

// ---------- sign-in ----------

const $ = (id) => document.getElementById(id);

function signOut(message) {
  sessionStorage.removeItem(TOKEN_KEY);
  $("nav").hidden = true;
  $("view").hidden = true;
  $("sign-in").hidden = false;
  $("sign-in-error").textContent = message || "";
  $("token").focus();
}

async function signIn(event) {
  event.preventDefault();
  const token = $("token").value.trim();
  sessionStorage.setItem(TOKEN_KEY, token);
  try {
    await api("/v1/ops/escalations?limit=1", { signingIn: true });
  } catch (error) {
    sessionStorage.removeItem(TOKEN_KEY);
    $("sign-in-error").textContent = error.code === "auth.forbidden"
      ? "That token is valid but not an operator's." : `Sign-in failed: ${error.message}`;
    return;
  }
  $("token").value = "";
  location.hash = location.hash || "#escalations";
  route();
}

// ---------- views ----------

// A list with a state filter, "load more" paging by the last id, and per-row actions.
function listView({ title, path, states, initial, idOf, columns, intro }) {
  return async (view, params) => {
    const state = params.get("state") || initial;
    const rows = [];
    const status = el("span", { class: "count" });
    const holder = el("div");
    const more = el("button", { type: "button", class: "secondary", onclick: () => load(rows.length ? idOf(rows[rows.length - 1]) : undefined) }, "Load more");
    const select = el("select", { "aria-label": "state", onchange: () => { location.hash = `${location.hash.split("?")[0]}?state=${select.value}`; } },
      states.map((s) => el("option", { value: s, selected: s === state }, s)));
    async function load(after) {
      more.disabled = true;
      const page = await api(`${path}?${query({ state, limit: PAGE, after })}`);
      rows.push(...page);
      holder.replaceChildren(table(columns(refresh), rows));
      status.textContent = `${rows.length} shown`;
      more.hidden = page.length < PAGE;
      more.disabled = false;
    }
    function refresh() { rows.length = 0; return load(); }
    view.replaceChildren(el("h2", {}, title), intro ? el("p", { class: "muted" }, intro) : null,
      el("div", { class: "toolbar" }, el("label", {}, "State ", select),
        el("button", { type: "button", class: "secondary", onclick: refresh }, "Refresh"), status),
      holder, el("p", {}, more));
    await load();
  };
}

// A button that asks for a note, then posts it; errors are shown next to it.
function noteAction(label, cls, send, done) {
  const cell = el("span");
  const start = el("button", { type: "button", class: cls, onclick: () => {
    const note = el("textarea", { required: true, maxlength: 2000, placeholder: "Why (required)" });
    const error = el("span", { class: "error" });
    const form = el("form", { class: "note-form", onsubmit: async (event) => {
      event.preventDefault();
      try { await send(note.value); await done(); } catch (e) { error.textContent = e.message; }
    } }, note, el("span", {}, el("button", { type: "submit", class: cls }, label), " ",
      el("button", { type: "button", class: "secondary", onclick: () => cell.replaceChildren(start) }, "Cancel")), error);
    cell.replaceChildren(form);
    note.focus();
  } }, `${label}…`);
  cell.append(start);
  return cell;
}

function plainAction(label, cls, send, done) {
  const error = el("span", { class: "error" });
  return el("span", {}, el("button", { type: "button", class: cls, onclick: async () => {
    try { await send(); await done(); } catch (e) { error.textContent = ` ${e.message}`; }
  } }, label), error);
}

const escalations = listView({
  title: "Escalations", path: "/v1/ops/escalations", states: ["open", "acknowledged", "resolved", "all"],
  initial: "open", idOf: (row) => row.escalation_id,
  intro: "Open episodes remind until resolved. Resolving closes the episode; it never changes a payment.",
  columns: (refresh) => [
    ["#", (r) => r.escalation_id, "mono"],
    ["Reason", (r) => badge(r.reason)],
    ["Key", (r) => r.escalation_key, "mono"],
    ["Attempt", (r) => attemptLink(r.attempt_id)],
    ["Raised", (r) => text(r.raised_at), "mono"],
    ["Acknowledged", (r) => text(r.acknowledged_at), "mono"],
    ["Reminders", (r) => r.reminder_count],
    ["Resolved", (r) => text(r.resolved_at), "mono"],
    ["Details", (r) => json(r.details)],
    ["", (r) => (r.resolved_at ? "" : [
      plainAction("Acknowledge", "secondary", () => api(`/v1/ops/escalations/${r.escalation_id}/acknowledge`, { method: "POST" }), refresh),
      noteAction("Resolve", "", (note) => api(`/v1/ops/escalations/${r.escalation_id}/resolve`, { method: "POST", body: { note } }), refresh),
    ]), "actions"],
  ],
});

const attempts = listView({
  title: "Payment attempts", path: "/v1/ops/attempts",
  states: ["Unknown", "Started", "NotStarted", "Succeeded", "Failed", "NotApplied"], initial: "Unknown",
  idOf: (row) => row.attempt_id,
  intro: "Oldest first. Unknown means nobody knows yet whether the payment took effect: recovery keeps looking.",
  columns: () => [
    ["Attempt", (r) => attemptLink(r.attempt_id)],
    ["Order", (r) => r.order_id, "mono"],
    ["Reference", (r) => r.client_reference, "mono"],
    ["Account", (r) => r.provider_account, "mono"],
    ["Amount (minor)", (r) => `${r.amount_minor} ${r.currency}`, "mono"],
    ["State", (r) => badge(r.state)],
    ["Reason", (r) => text(r.outcome_reason)],
    ["Created", (r) => r.created_at, "mono"],
    ["Escalation deadline", (r) => text(r.escalation_deadline), "mono"],
    ["Next check", (r) => text(r.next_check_at), "mono"],
    ["Lease", (r) => (r.recovery_owner ? `${r.recovery_owner} until ${r.lease_expires_at}` : "—"), "mono"],
  ],
});

async function attempt(view, params, id) {
  const history = await api(`/v1/ops/attempts/${encodeURIComponent(id)}`);
  const a = history.attempt;
  view.replaceChildren(
    el("p", {}, el("a", { href: `#attempts?state=${encodeURIComponent(a.state)}` }, `← ${a.state} attempts`)),
    el("h2", {}, "Attempt ", el("span", { class: "mono" }, a.attempt_id), " ", badge(a.state)),
    fields(a, Object.keys(a)),
    el("h3", {}, `History (${history.events.length} events, oldest first)`),
    table([
      ["#", (e) => e.event_id, "mono"],
      ["When", (e) => e.occurred_at, "mono"],
      ["Kind", (e) => badge(e.kind)],
      ["Actor", (e) => e.actor, "mono"],
      ["Notification key", (e) => text(e.notification_key), "mono"],
      ["Detail", (e) => json(e.detail)],
    ], history.events));
}

const outbox = listView({
  title: "Outbox", path: "/v1/ops/outbox", states: ["pending", "dead", "dispatched", "discarded"], initial: "pending",
  idOf: (row) => row.message_id,
  intro: "A dead-lettered effect blocks its attempt's later effects until it is retried or discarded.",
  columns: (refresh) => [
    ["#", (r) => r.message_id, "mono"],
    ["Kind", (r) => r.kind],
    ["Dedup key", (r) => r.dedup_key, "mono"],
    ["Attempt", (r) => attemptLink(r.attempt_id)],
    ["Tries", (r) => r.delivery_attempts],
    ["Next try", (r) => text(r.next_attempt_at), "mono"],
    ["Last error", (r) => text(r.last_error)],
    ["Blocked by", (r) => text(r.blocked_by), "mono"],
    ["Dead since", (r) => text(r.dead_lettered_at), "mono"],
    ["Dispatched", (r) => text(r.dispatched_at), "mono"],
    ["Discarded", (r) => (r.discarded_at ? `${r.discarded_at} by ${r.discarded_by}: ${r.discard_note}` : "—")],
    ["", (r) => (r.dispatched_at || r.discarded_at || !(r.dead_lettered_at || r.delivery_attempts > 0) ? "" : [
      plainAction("Retry", "secondary", () => api(`/v1/ops/outbox/${r.message_id}/retry`, { method: "POST" }), refresh),
      r.dead_lettered_at ? noteAction("Discard", "danger", (note) => api(`/v1/ops/outbox/${r.message_id}/discard`, { method: "POST", body: { note } }), refresh) : null,
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

async function health(view) {
  const [alive, ready, metricsText] = await Promise.all([
    api("/healthz").catch((e) => ({ status: e.message })),
    fetch("/readyz", { cache: "no-store" }).then((r) => r.json()),
    api("/metrics"),
  ]);
  const g = gauges(metricsText);
  const card = (title, value, detail) => el("div", { class: "card" }, el("div", { class: "muted" }, title), el("div", { class: "big" }, value), detail);
  const rows = (name) => table([["Labels", (r) => r.labels || "—", "mono"], ["Value", (r) => r.value, "mono"]], g[name] || []);
  view.replaceChildren(
    el("h2", {}, "Health and metrics"),
    el("div", { class: "cards" },
      card("Process (/healthz)", badge(alive.status)),
      card("Ready (/readyz)", badge(ready.status === "ready" ? "ok" : "unavailable"), json(ready.checks)),
      card("Open escalations", text((g.paygate_open_escalations || [{}])[0].value))),
    el("h3", {}, "Payment attempts by state"), rows("paygate_payment_attempts"),
    el("h3", {}, "Outbox messages by delivery state"), rows("paygate_outbox_messages"),
    el("h3", {}, "Seconds since each process kind's freshest heartbeat"), rows("paygate_process_last_seen_age_seconds"));
}

// ---------- routing ----------

const VIEWS = { escalations, attempts, attempt, outbox, health };

async function route() {
  if (!sessionStorage.getItem(TOKEN_KEY)) { signOut(); return; }
  const [path, search] = (location.hash.slice(1) || "escalations").split("?");
  const [name, id] = path.split("/");
  const render = VIEWS[name] || escalations;
  $("sign-in").hidden = true;
  $("nav").hidden = false;
  for (const link of document.querySelectorAll("nav a")) {
    link.classList.toggle("active", link.getAttribute("href") === `#${name === "attempt" ? "attempts" : name}`);
  }
  const view = $("view");
  view.hidden = false;
  view.replaceChildren(el("p", { class: "muted" }, "Loading…"));
  try {
    await render(view, new URLSearchParams(search || ""), id && decodeURIComponent(id));
  } catch (error) {
    view.replaceChildren(el("p", { class: "error", role: "alert" }, error.message));
  }
}

document.addEventListener("DOMContentLoaded", () => {
  $("sign-in-form").addEventListener("submit", signIn);
  $("sign-out").addEventListener("click", () => signOut("Signed out."));
  window.addEventListener("hashchange", route);
  route();
});
