// Console views of provider-side reconciliation (docs/decisions/0071): the runs, and one run with
// the findings a person may act on (orphans, disagreements, missing objects; evidence applied).
import { api, attemptLink, badge, el, fields, formAction, kv, link, listView, money, table, text, when } from "./core.js";

const runLink = (id) => link(`#reconciliation-run/${encodeURIComponent(id)}`, id);
const CLASSES = ["matched", "evidence", "orphan", "disagreement", "missing"];
const counts = (c) => CLASSES.map((name) => `${name} ${c[name]}`).join(" · ");

// Start a run over a window of an account: the API answers 202 and a worker executes it.
function startRun(refresh) {
  return formAction("Start a run", "secondary", () => {
    const input = (name, placeholder) => el("input", { type: "text", name, required: true, spellcheck: "false",
      placeholder, "aria-label": name, class: "mono" });
    const account = input("provider_account", "cardco:acct_store:live");
    const from = input("from", "2026-12-01T00:00:00Z");
    const to = input("to", "2026-12-02T00:00:00Z");
    return { nodes: [account, from, to],
      get value() { return { provider_account: account.value.trim(), from: from.value.trim(), to: to.value.trim() }; } };
  }, (controls) => api("/v1/ops/reconciliation/runs", { method: "POST", body: controls.value }), refresh);
}

export function reconciliation(params, ctx) {
  return listView({
    title: "Reconciliation runs", path: "/v1/ops/reconciliation/runs",
    states: ["all", "Running", "Finished", "Failed"], initial: "all",
    intro: "Each run lists what one provider account created in its window and matches every object to an " +
      "attempt: orphans (money paygate never recorded), disagreements and missing objects are escalated. " +
      "The clock starts one per account every reconciliation_interval_s.",
    extra: startRun(ctx.refresh),
    columns: () => [
      ["Run", (r) => runLink(r.run_id)],
      ["Account", (r) => r.provider_account, "mono"],
      ["From", (r) => when(r.from), "mono"],
      ["To", (r) => when(r.to), "mono"],
      ["State", (r) => badge(r.state)],
      ["Findings", (r) => counts(r.counts)],
      ["Read", (r) => r.objects_read, "num"],
      ["By", (r) => r.started_by, "mono"],
      ["Requested", (r) => when(r.requested_at), "mono"],
      ["Finished", (r) => when(r.finished_at), "mono"],
    ],
  })(params, ctx);
}

export async function reconciliationRun(params, ctx, id) {
  const run = await api(`/v1/ops/reconciliation/runs/${encodeURIComponent(id)}`);
  return el("div", {},
    el("p", {}, el("a", { href: "#reconciliation" }, "← reconciliation runs")),
    el("h2", {}, "Reconciliation run ", el("span", { class: "mono" }, run.run_id), " ", badge(run.state)),
    fields({ ...run, counts: counts(run.counts) }, ["provider_account", "from", "to", "state", "counts",
      "objects_read", "started_by", "requested_at", "finished_at", "failure"]),
    el("h3", {}, `Findings (${run.findings.length}, all but matched)`),
    table([
      ["Class", (f) => badge(f.class)],
      ["Kind", (f) => f.kind],
      ["Provider object", (f) => f.provider_object_id, "mono"],
      ["Reference", (f) => text(f.details.client_reference), "mono"],
      ["Amount", (f) => money(f.details.amount_minor, f.details.currency), "num"],
      ["Attempt", (f) => (f.kind === "payment" ? attemptLink(f.attempt_id) : text(f.attempt_id)), "mono"],
      ["Found", (f) => when(f.found_at), "mono"],
      ["Details", (f) => kv(f.details)],
    ], run.findings, "Nothing to act on: every object matched."));
}
