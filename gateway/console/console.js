// paygate operator console (API.md "Operations": "A browser console under /console/ for operators").
// Vanilla JS modules, no build step, no external assets. This file signs in, routes between the
// views and keeps the shown view live: it polls the view's own endpoints every LIVE_S seconds
// while the tab is visible, shows when it last did, and can be paused.
import { TOKEN_KEY, api, el, problem, whenUnauthorized } from "./core.js";
import { notifications, payout, payouts, recalls, refund, refunds } from "./views-money.js";
import { attempt, attempts, escalations, health, outbox } from "./views-ops.js";
import { overview } from "./views-overview.js";
import { reconciliation, reconciliationRun } from "./views-reconciliation.js";

const LIVE_S = 5;
const HOME = "overview";
const VIEWS = { overview, escalations, attempts, attempt, payouts, payout, recalls, notifications, refunds, refund, outbox,
  reconciliation, "reconciliation-run": reconciliationRun, health };
const NAV_OF = { attempt: "attempts", payout: "payouts", refund: "refunds", "reconciliation-run": "reconciliation" };
const $ = (id) => document.getElementById(id);

// ---------- sign-in ----------

function signOut(message) {
  sessionStorage.clear();
  $("nav").hidden = true;
  $("live").hidden = true;
  $("view").hidden = true;
  $("sign-in").hidden = false;
  $("sign-in-error").textContent = message || "";
  $("token").focus();
}

async function signIn(event) {
  event.preventDefault();
  sessionStorage.setItem(TOKEN_KEY, $("token").value.trim());
  try {
    await api("/v1/ops/escalations?limit=1", { signingIn: true });
  } catch (error) {
    sessionStorage.removeItem(TOKEN_KEY);
    $("sign-in-error").textContent = error.code === "auth.forbidden"
      ? "That token is valid but not an operator's." : `Sign-in failed: ${error.message}`;
    return;
  }
  $("token").value = "";
  location.hash = location.hash || `#${HOME}`;
  route();
}

// ---------- live ----------

const live = { paused: false, hold: null, updated: null, failed: null, busy: false, generation: 0 };

function showLive() {
  const state = live.paused ? "Paused" : live.hold ? `Holding: ${live.hold}` : "Live";
  const stamp = live.updated ? `updated at ${live.updated.toLocaleTimeString("en-GB")}` : "not loaded yet";
  $("live-state").textContent = state;
  $("live-state").className = `badge ${live.paused || live.hold ? "paused" : "live"}`;
  $("live-updated").textContent = stamp;
  $("live-error").textContent = live.failed ? `refresh failed: ${live.failed}` : "";
  $("live-toggle").textContent = live.paused || live.hold ? "Resume" : "Pause";
}

function current() {
  const [path, search] = (location.hash.slice(1) || HOME).split("?");
  const [name, id] = path.split("/");
  return { name: VIEWS[name] ? name : HOME, params: new URLSearchParams(search || ""),
    id: id && decodeURIComponent(id) };
}

const context = {
  refresh: () => render(true),
  hold: (reason) => { live.hold = reason; showLive(); },
};

// Render the current view; `quiet` keeps what is shown until the new content is ready, and on an
// error keeps it too (the live bar says what failed), so a refresh never flashes or wipes a view.
async function render(quiet) {
  const generation = ++live.generation;
  const { name, params, id } = current();
  const view = $("view");
  if (!quiet) view.replaceChildren(el("p", { class: "muted" }, "Loading…"));
  live.busy = true;
  try {
    const node = await VIEWS[name](params, context, id);
    if (generation !== live.generation) return;
    view.replaceChildren(node);
    live.updated = new Date();
    live.failed = null;
  } catch (error) {
    if (generation !== live.generation) return;
    if (quiet && view.firstChild) live.failed = error.message;
    else view.replaceChildren(problem(error));
  } finally {
    if (generation === live.generation) live.busy = false;
    showLive();
  }
}

function tick() {
  const formOpen = $("view").querySelector("[data-busy]") !== null;
  if (live.paused || live.hold || live.busy || formOpen || document.visibilityState !== "visible") return;
  if (!sessionStorage.getItem(TOKEN_KEY) || $("view").hidden) return;
  render(true);
}

function toggleLive() {
  if (live.paused || live.hold) {
    live.paused = false;
    live.hold = null;
    render(true);
  } else {
    live.paused = true;
  }
  showLive();
}

// ---------- routing ----------

async function route() {
  if (!sessionStorage.getItem(TOKEN_KEY)) { signOut(); return; }
  const { name } = current();
  $("sign-in").hidden = true;
  $("nav").hidden = false;
  $("live").hidden = false;
  for (const a of document.querySelectorAll("nav a")) {
    a.classList.toggle("active", a.getAttribute("href") === `#${NAV_OF[name] || name}`);
  }
  $("view").hidden = false;
  live.hold = null;
  await render(false);
}

document.addEventListener("DOMContentLoaded", () => {
  whenUnauthorized(signOut);
  $("sign-in-form").addEventListener("submit", signIn);
  $("sign-out").addEventListener("click", () => signOut("Signed out."));
  $("live-toggle").addEventListener("click", toggleLive);
  window.addEventListener("hashchange", route);
  setInterval(tick, LIVE_S * 1000);
  route();
});
