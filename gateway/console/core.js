// paygate operator console: the pieces every view uses (API.md "Operations").
// Every value from the API is rendered as text (createElement + textContent), never parsed as HTML.
// The operator token lives in this tab's sessionStorage and is sent only to this gateway.

export const TOKEN_KEY = "paygate.operatorToken";
const PAGE = 50;

// ---------- DOM helpers: text only ----------

export function el(tag, attrs, ...children) {
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

export const text = (value) => (value === null || value === undefined || value === "" ? "—" : String(value));
export const badge = (value) => (value === null || value === undefined ? "—"
  : el("span", { class: `badge ${String(value).split(":")[0]}` }, String(value)));
// An event's or an episode's detail object as compact "key value" lines (nested values as JSON).
export function kv(object) {
  if (!object || typeof object !== "object") return text(object);
  return el("dl", { class: "kv" }, Object.entries(object).flatMap(([key, value]) => [el("dt", {}, key),
    el("dd", {}, value !== null && typeof value === "object" ? JSON.stringify(value) : text(value))]));
}
export const link = (href, label) => el("a", { href, class: "mono" }, label);
export const attemptLink = (id) => (id ? link(`#attempt/${encodeURIComponent(id)}`, id) : "—");
export const payoutLink = (id) => (id ? link(`#payout/${encodeURIComponent(id)}`, id) : "—");
export const refundLink = (orderId) => link(`#refund/${encodeURIComponent(orderId)}`, orderId);

// RFC 3339 UTC from the API -> "2026-11-29 16:00:05Z", the full value kept as a tooltip.
export function when(value) {
  if (!value) return "—";
  return el("time", { datetime: value, title: value }, value.replace("T", " ").replace(/\.\d+Z$/, "Z"));
}

// amount_minor + currency -> "4,250.00 EUR" with the currency's own minor digits (JPY has none).
export function money(minor, currency) {
  if (minor === null || minor === undefined) return "—";
  let digits = 2;
  try {
    digits = new Intl.NumberFormat("en", { style: "currency", currency }).resolvedOptions().maximumFractionDigits;
  } catch (e) { /* an unknown code keeps two digits */ }
  const major = (minor / 10 ** digits).toLocaleString("en", { minimumFractionDigits: digits, maximumFractionDigits: digits });
  return el("span", { class: "money", title: `${minor} minor units` }, `${major} ${currency}`);
}

export function table(columns, rows, empty = "Nothing here.") {
  return el("div", { class: "scroll" }, el("table", {},
    el("thead", {}, el("tr", {}, columns.map(([title]) => el("th", {}, title)))),
    el("tbody", {}, rows.length === 0
      ? el("tr", {}, el("td", { colspan: columns.length, class: "muted" }, empty))
      : rows.map((row) => el("tr", {}, columns.map(([, cell, cls]) => el("td", { class: cls }, cell(row))))))));
}

export function fields(object, names) {
  return el("dl", { class: "fields" }, names.flatMap((name) => {
    const value = object[name];
    const shown = value instanceof Node ? value
      : typeof value === "string" && /^\d{4}-\d\d-\d\dT/.test(value) ? when(value)
        : value !== null && typeof value === "object" ? JSON.stringify(value) : text(value);
    return [el("dt", {}, name), el("dd", {}, shown)];
  }));
}

// ---------- the API ----------

// An RFC 9457 problem document as the operator should read it: status, code, title, detail, and
// the field errors of a 422.
export class Problem extends Error {
  constructor(status, body) {
    const title = body && body.title ? body.title : `HTTP ${status}`;
    super(body && body.detail ? `${title}: ${body.detail}` : title);
    this.status = status;
    this.code = body && body.code;
    this.errors = (body && body.errors) || [];
  }
}

export function problem(error) {
  if (!(error instanceof Problem)) return el("div", { class: "problem", role: "alert" }, String(error.message || error));
  return el("div", { class: "problem", role: "alert" },
    el("strong", {}, `${error.status} `), el("code", {}, text(error.code)), " ", error.message,
    error.errors.length ? el("ul", {}, error.errors.map((e) => el("li", {}, `${e.field}: ${e.message}`))) : null);
}

let onUnauthorized = () => {};
export function whenUnauthorized(callback) { onUnauthorized = callback; }

async function call(path, options = {}) {
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
    if (response.status === 401 && !options.signingIn) onUnauthorized("Your token was refused; sign in again.");
    throw new Problem(response.status, typeof body === "object" ? body : null);
  }
  return { body, response };
}

export async function api(path, options = {}) {
  return (await call(path, options)).body;
}

// The URL of an RFC 8288 `Link: <...>; rel="next"` header, resolved against this page, or null.
export function nextLink(header) {
  for (const part of (header || "").split(/,(?=\s*<)/)) {
    const match = /^\s*<([^>]*)>(.*)$/.exec(part);
    if (match && /;\s*rel\s*=\s*"?([^";]*\s)?next(\s[^";]*)?"?\s*(;|$)/i.test(match[2])) {
      const url = new URL(match[1], location.href);
      return url.origin === location.origin ? url.pathname + url.search : null;
    }
  }
  return null;
}

// One page of a list endpoint and where the next one is (the Link header), newest first.
export async function page(path) {
  const { body, response } = await call(path);
  return { items: body, next: nextLink(response.headers.get("link")) };
}

export const query = (params) => new URLSearchParams(
  Object.entries(params).filter(([, v]) => v !== undefined && v !== null && v !== ""));
// Newest first: what changed last is what an operator looks at first (the API's default is oldest first).
export const listQuery = (params) => query({ ...params, limit: PAGE, order: "desc" });

// ---------- actions ----------

// A button that opens a small form (a note, an attempt id...), posts it, then refreshes; a
// refusal is shown as its problem document. While the form is open the live view holds still.
export function formAction(label, cls, inputs, send, done) {
  const cell = el("span", { class: "action" });
  const start = el("button", { type: "button", class: cls, onclick: () => {
    const controls = inputs();
    const error = el("div");
    const form = el("form", { class: "action-form", "data-busy": "", onsubmit: async (event) => {
      event.preventDefault();
      error.replaceChildren();
      try { await send(controls); await done(); } catch (e) { error.replaceChildren(problem(e)); }
    } }, controls.nodes, el("span", {}, el("button", { type: "submit", class: cls }, label), " ",
      el("button", { type: "button", class: "secondary", onclick: () => cell.replaceChildren(start) }, "Cancel")), error);
    cell.replaceChildren(form);
    (form.querySelector("input, textarea") || form).focus({ preventScroll: true });
  } }, `${label}…`);
  cell.append(start);
  return cell;
}

export function noteAction(label, cls, send, done, placeholder = "Why (required)") {
  return formAction(label, cls, () => {
    const note = el("textarea", { required: true, maxlength: 2000, placeholder });
    return { nodes: [note], get value() { return note.value; } };
  }, (controls) => send(controls.value), done);
}

export function plainAction(label, cls, send, done) {
  const error = el("div");
  return el("span", { class: "action" }, el("button", { type: "button", class: cls, onclick: async () => {
    error.replaceChildren();
    try { await send(); await done(); } catch (e) { error.replaceChildren(problem(e)); }
  } }, label), error);
}

// ---------- lists ----------

// A list with a state filter: the first page, then every further page by its Link header.
// `render(params)` builds into a detached node, so a live refresh swaps it in without a flash.
export function listView({ title, path, states, initial, columns, intro, extra, filters }) {
  return async (params, ctx) => {
    const state = params.get("state") || initial;
    const rows = [];
    const status = el("span", { class: "count" });
    const holder = el("div");
    let next = null;
    const more = el("button", { type: "button", class: "secondary", onclick: async () => {
      ctx.hold("paging");
      await load(next);
    } }, "Load more");
    const select = states && el("select", { "aria-label": "state", onchange: () => {
      location.hash = `${location.hash.split("?")[0]}?state=${select.value}`;
    } }, states.map((s) => el("option", { value: s, selected: s === state }, s)));
    async function load(url) {
      more.disabled = true;
      const found = await page(url);
      rows.push(...found.items);
      next = found.next;
      holder.replaceChildren(table(columns(ctx.refresh), rows));
      status.textContent = `${rows.length} shown${next ? ", more exist" : ""}`;
      more.hidden = !next;
      more.disabled = false;
    }
    await load(`${path}?${listQuery({ ...filters, ...(states ? { state } : {}) })}`);
    return el("div", {}, el("h2", {}, title), intro ? el("p", { class: "muted" }, intro) : null,
      el("div", { class: "toolbar" }, select ? el("label", {}, "State ", select) : null, status, extra || null),
      holder, el("p", {}, more));
  };
}
