// The console's home: the system at a glance, drawn from one read model,
// GET /v1/ops/overview. Rates and backlogs first, rows one click away: every chart links to the
// list behind it. The charts are small hand-written SVG (no library, no build step, nothing from
// another origin); colours come from console.css classes, numbers are drawn as text.
import { api, badge, el, text } from "./core.js";

const SVG = "http://www.w3.org/2000/svg";
const SERIES = [
  ["started", "Started"], ["succeeded", "Succeeded"], ["failed", "Failed"],
  ["not_applied", "NotApplied"], ["unknown", "Unknown"],
];

function svg(tag, attrs, ...children) {
  const node = document.createElementNS(SVG, tag);
  for (const [name, value] of Object.entries(attrs || {})) node.setAttribute(name, String(value));
  for (const child of children.flat()) {
    if (child !== null && child !== undefined) node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

// A line chart of per-minute counts: one polyline per series over `slots` (oldest first), a y axis
// from 0 to the largest count, the first and last minute under the x axis.
export function lineChart(slots, series, label) {
  const width = 420, height = 150, left = 28, right = 8, top = 10, bottom = 22;
  const most = Math.max(1, ...slots.flatMap((slot) => series.map(([key]) => slot[key])));
  const x = (i) => left + (i * (width - left - right)) / Math.max(1, slots.length - 1);
  const y = (v) => top + (height - top - bottom) * (1 - v / most);
  const minute = (slot) => slot.minute.slice(11, 16);
  return svg("svg", { viewBox: `0 0 ${width} ${height}`, class: "chart", role: "img", "aria-label": label },
    svg("line", { x1: left, y1: y(0), x2: width - right, y2: y(0), class: "axis" }),
    svg("line", { x1: left, y1: top, x2: left, y2: y(0), class: "axis" }),
    svg("text", { x: left - 4, y: top + 8, class: "tick", "text-anchor": "end" }, most),
    svg("text", { x: left - 4, y: y(0), class: "tick", "text-anchor": "end" }, 0),
    slots.length ? svg("text", { x: left, y: height - 6, class: "tick" }, minute(slots[0])) : null,
    slots.length ? svg("text", { x: width - right, y: height - 6, class: "tick", "text-anchor": "end" },
      minute(slots[slots.length - 1])) : null,
    series.map(([key, name]) => svg("polyline", {
      class: `series ${name}`, fill: "none",
      points: slots.map((slot, i) => `${x(i).toFixed(1)},${y(slot[key]).toFixed(1)}`).join(" "),
    }, svg("title", {}, name))));
}

// A horizontal bar chart: one labelled bar per [label, value, class] row, the value written at its end.
export function barChart(rows, label) {
  const barHeight = 16, gap = 6, width = 420, labelWidth = 200, valueWidth = 30;
  const most = Math.max(1, ...rows.map(([, value]) => value));
  const height = Math.max(1, rows.length) * (barHeight + gap);
  return svg("svg", { viewBox: `0 0 ${width} ${height}`, class: "chart bars", role: "img", "aria-label": label },
    rows.map(([name, value, cls], i) => {
      const y = i * (barHeight + gap);
      const length = ((width - labelWidth - valueWidth) * value) / most;
      return svg("g", {},
        svg("text", { x: labelWidth - 6, y: y + barHeight - 5, class: "tick", "text-anchor": "end" }, name),
        svg("rect", { x: labelWidth, y, width: Math.max(value ? 2 : 0, length).toFixed(1), height: barHeight,
          class: `bar ${cls || ""}` }),
        svg("text", { x: labelWidth + length + 6, y: y + barHeight - 5, class: "value" }, value));
    }));
}

const seconds = (value) => (value === null || value === undefined ? "—"
  : value < 1 ? `${Math.round(value * 1000)} ms` : value < 120 ? `${value.toFixed(1)} s`
    : value < 7200 ? `${Math.round(value / 60)} min` : `${(value / 3600).toFixed(1)} h`);
const percent = (value) => (value === null || value === undefined ? "—" : `${(value * 100).toFixed(1)} %`);

// A panel: a title that links to the list behind it, what to read in it, the chart or table.
function panel(id, title, href, intro, ...body) {
  return el("section", { class: "panel", id: `panel-${id}` },
    el("h3", {}, el("a", { href }, title, " →")), intro ? el("p", { class: "muted small" }, intro) : null, body);
}

function legend(series) {
  return el("p", { class: "legend small" }, series.map(([, name]) => el("span", { class: `key ${name}` }, name)));
}

export async function overview() {
  const o = await api("/v1/ops/overview");
  const hour = o.attempts_last_hour;
  const payment = o.unknown_attempts.find((u) => u.kind === "payment") || { unknown: 0, oldest_age_s: null };
  const oldest = Math.max(-1, ...o.unknown_attempts.map((u) => (u.oldest_age_s === null ? -1 : u.oldest_age_s)));
  const openEscalations = o.escalations.reduce((sum, e) => sum + e.open, 0);
  const paused = o.providers.filter((p) => p.paused_until);
  const card = (id, title, value, href) => el("a", { class: "card stat", href, id: `stat-${id}` },
    el("div", { class: "muted" }, title), el("div", { class: "big" }, value));
  return el("div", { class: "overview" },
    el("h2", {}, "Overview"),
    el("div", { class: "cards" },
      card("settled", "Settled in the last hour",
        `${hour.succeeded + hour.failed + hour.not_applied} of ${hour.started} started`, "#attempts?state=all"),
      card("unknown", "Unknown attempts now", String(o.unknown_attempts.reduce((s, u) => s + u.unknown, 0)),
        "#attempts?state=Unknown"),
      card("oldest-unknown", "Oldest Unknown", oldest < 0 ? "none" : seconds(oldest), "#attempts?state=Unknown"),
      card("escalations", "Open escalations", String(openEscalations), "#escalations"),
      card("dead-letters", "Dead letters", String(o.outbox.dead_letters), "#outbox?state=dead"),
      card("paused", "Paused accounts", String(paused.length), "#health")),
    el("div", { class: "panels" },
      panel("attempts", `Payment attempts per minute, last ${o.window_minutes} minutes`, "#attempts?state=all",
        "Started against settled: a gap that grows means answers are not coming back.",
        lineChart(o.attempts_per_minute, SERIES, "payment attempts per minute"), legend(SERIES),
        el("p", { class: "small" }, SERIES.map(([key, name]) => `${name} ${hour[key]}`).join(" · "))),
      panel("unknown", "Unknown attempts by kind", "#attempts?state=Unknown",
        "Nobody knows yet whether these took effect; recovery keeps looking. Age is since the send began.",
        barChart(o.unknown_attempts.map((u) => [`${u.kind} (oldest ${seconds(u.oldest_age_s)})`, u.unknown,
          "Unknown"]), "Unknown attempts by kind")),
      panel("escalations", "Open escalations by reason", "#escalations",
        "Each is one reason a person must look; it reminds until resolved.",
        o.escalations.length ? barChart(o.escalations.map((e) => [`${e.reason} (${seconds(e.oldest_s)})`, e.open,
          "open"]), "open escalations by reason") : el("p", { class: "muted" }, "None open.")),
      panel("outbox", "Outbox backlog and dead letters", "#outbox?state=pending",
        `Effects waiting to reach the merchant or an operator; oldest waiting ${seconds(o.outbox.oldest_pending_age_s)}.`,
        barChart([["pending", o.outbox.pending, "pending"], ["dead letters", o.outbox.dead_letters, "dead"],
          ...o.outbox.by_kind.map((k) => [`${k.kind}`, k.pending + k.dead_letters, k.dead_letters ? "dead" : "pending"])],
        "outbox backlog"),
        el("p", {}, el("a", { href: "#outbox?state=dead" }, "Dead letters →"))),
      panel("providers", "Provider calls per account", "#health",
        "Latency and error rate (no answer: timeouts, cuts, 5xx, 429) since the counters began; Grafana shows " +
        "them per 5 minutes. Lookup tokens left now.",
        el("div", { class: "scroll" }, el("table", {},
          el("thead", {}, el("tr", {}, ["Account", "Calls", "Error rate", "p50", "p99", "Lookup tokens", "Paused"]
            .map((h) => el("th", {}, h)))),
          el("tbody", {}, o.providers.map((p) => el("tr", {},
            el("td", { class: "mono" }, p.account), el("td", { class: "num" }, p.calls),
            el("td", { class: "num" }, percent(p.error_rate)), el("td", { class: "num" }, seconds(p.p50_s)),
            el("td", { class: "num" }, seconds(p.p99_s)),
            el("td", { class: "num" }, `${Math.floor(p.lookup_tokens)} / ${p.lookup_burst}`),
            el("td", {}, p.paused_until ? [badge("paused"), ` until ${p.paused_until} (${text(p.pause_reason)})`]
              : "no")))))),
        barChart(o.providers.map((p) => [p.account, p.calls, p.errors ? "dead" : "ok"]), "provider calls per account")),
      panel("payouts", "Payouts by state", "#payouts?state=Unknown",
        "Unknown payouts block a new attempt until each is resolved.",
        Object.keys(o.payouts_by_state).length
          ? barChart(Object.entries(o.payouts_by_state).map(([state, count]) => [state, count, state]), "payouts by state")
          : el("p", { class: "muted" }, "No payouts yet."),
        el("p", { class: "small" }, Object.keys(o.payouts_by_state).map((state) => el("a",
          { href: `#payouts?state=${state}`, class: "chip" }, state))))),
    el("p", { class: "muted small" }, `As of ${o.as_of}.`));
}
