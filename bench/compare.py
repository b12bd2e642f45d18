"""Compare one benchmark on two git revisions, back to back (bench/README.md, "Comparing two revisions").

    python bench/compare.py REV_A REV_B [--bench notifications|checkout|outbox|recovery] [--rounds 1] [--json PATH]
                            [-- BENCH ARGS...]

Absolute figures drift by 2x between days on a shared machine; two revisions run one right after
the other on the same machine drift together, so their ratio is what says whether a change helped.
Each revision is checked out in its own detached git worktree with its own virtualenv (``pip
install -e '.[test]'``), both under one temporary directory that is removed afterwards (the
worktrees are unregistered too). Both are set up first, then the benchmark runs on A, then on B,
each with the same arguments (``--json`` always; anything after ``--`` is passed on, e.g.
``-- --duration 5 --connections 16``). With ``--rounds N`` it runs N times, alternating the order
(A B, B A, ...) so neither revision always runs on the warmer machine; the figures are the means.
``--same-bench`` runs B's bench/ scripts on A's code too, for a figure only B's scripts measure
(they must import only what A has: a script that needs a module B added fails on A).

Printed: each figure for A and B and B/A (a rate's ratio above 1 means B is faster; a latency's or
a CPU figure's below 1 means B is cheaper). ``--json`` writes both revisions' commits and figures
and the ratios.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
BENCHES = ("notifications", "checkout", "outbox", "recovery")
# The figures of each benchmark's --json that a comparison shows (bench/README.md, the JSON table).
# ``wrapped``: how often wrk started over on its prepared notifications; above 0 in a unique or
# duplicates run, part of its requests were duplicates answered from memory (NOT CLEAN), so it shows.
# ``pgbench_tps``: the ceiling the run's ratio is read against; a certified run's
# ``ratio_pgbench_without_record`` reads its rate against the record-less ceiling (docs/decisions/0087).
NOTIFICATION_KEYS = ("rate", "p99_ms", "ratio_pgbench", "pgbench_tps", "ratio_pgbench_without_record",
                     "gateway_cpu_us", "wrapped")
# Since 2026-12-05 a checkout run's ``notification_cpu_us_one_client`` is a notification whose effect is
# certified; ``..._without_record`` is what it was before (bench/README.md, ``python bench/checkout.py``).
CHECKOUT_KEYS = ("rate", "p50_ms", "p99_ms", "gateway_p50_ms", "ratio_pgbench", "pgbench_tps", "gateway_cpu_us",
                 "cpu_us_one_client", "one_client_rate", "notification_cpu_us_one_client", "checkout_cpu_ratio",
                 "notification_cpu_us_without_record", "checkout_cpu_ratio_without_record")
# Per run (one per worker count), named ``<workers>w <key>``.
RUN_KEYS = {"outbox": ("rate", "ratio_pgbench", "cpu_us_per_row"),
            "recovery": ("rate", "ratio_allowed", "achieved_after_burst", "ratio_lookup", "worker_cpu_us")}


@dataclass(frozen=True)
class Args:
    rev_a: str
    rev_b: str
    bench: str
    rounds: int
    json: Path | None
    bench_args: tuple[str, ...]
    same_bench: bool = False


def split_passed(argv: Sequence[str]) -> tuple[list[str], list[str]]:
    """A command line's own arguments and those after ``--``, which go to the benchmark unchanged."""
    argv = list(argv)
    if "--" not in argv:
        return argv, []
    cut = argv.index("--")
    return argv[:cut], argv[cut + 1:]


def parse_args(argv: Sequence[str]) -> Args:
    """The command line; everything after ``--`` goes to the benchmark unchanged."""
    argv, passed = split_passed(argv)
    parser = argparse.ArgumentParser(prog="bench/compare.py", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("rev_a", help="the baseline revision (e.g. main)")
    parser.add_argument("rev_b", help="the revision compared with it (e.g. a branch)")
    parser.add_argument("--bench", choices=BENCHES, default="notifications")
    parser.add_argument("--rounds", type=int, default=1, help="runs per revision, alternating the order")
    parser.add_argument("--json", type=Path, help="write both revisions' figures and the ratios here")
    parser.add_argument("--same-bench", action="store_true",
                        help="run B's bench/ scripts on both revisions (when B measures what A's scripts do not)")
    parsed = parser.parse_args(argv)
    if parsed.rounds < 1:
        parser.error("--rounds must be at least 1")
    if "--json" in passed:
        parser.error("the benchmark's --json is compare.py's own; use compare.py --json")
    return Args(parsed.rev_a, parsed.rev_b, parsed.bench, parsed.rounds, parsed.json, tuple(passed),
                parsed.same_bench)


def figures(bench: str, result: dict[str, Any]) -> dict[str, float]:
    """The compared figures of one benchmark's --json, by name. Notifications: each run's figures
    as ``<senders>s <mix> <key>`` and, per sender count and mix, ``<senders>s <mix>/unique``;
    outbox and recovery: each run's figures as ``<workers>w <key>``."""
    if bench == "checkout":
        return {key: float(result[key]) for key in CHECKOUT_KEYS if key in result}
    if bench in RUN_KEYS:
        return {f"{run['workers']}w {key}": float(run[key]) for run in result["runs"] for key in RUN_KEYS[bench]
                if run.get(key) is not None}
    out: dict[str, float] = {}
    unique: dict[int, float] = {}
    for run in result["runs"]:
        for key in NOTIFICATION_KEYS:
            if key in run:
                out[f"{run['senders']}s {run['mix']} {key}"] = float(run[key])
        if run["mix"] == "unique":
            unique[run["senders"]] = float(run["rate"])
    for run in result["runs"]:
        if run["mix"] != "unique" and unique.get(run["senders"]):
            out[f"{run['senders']}s {run['mix']}/unique"] = float(run["rate"]) / unique[run["senders"]]
    return out


def mean(runs: Sequence[dict[str, float]]) -> dict[str, float]:
    """Each figure's mean over the runs that have it."""
    names = [name for run in runs for name in run]
    return {name: sum(run[name] for run in runs if name in run) / sum(name in run for run in runs)
            for name in dict.fromkeys(names)}


def ratios(a: dict[str, float], b: dict[str, float]) -> dict[str, float | None]:
    """B/A for every figure both have; None where A's is zero."""
    return {name: (b[name] / a[name] if a[name] else None) for name in a if name in b}


def render(label_a: str, label_b: str, a: dict[str, float], b: dict[str, float]) -> str:
    """The comparison as a table: figure, A, B, B/A."""
    ratio = ratios(a, b)
    width = max([len(name) for name in ratio] + [6])
    lines = [f"{'figure':<{width}} {label_a:>12} {label_b:>12} {'B/A':>7}"]
    for name, value in ratio.items():
        shown = f"{value:.2f}" if value is not None else "-"
        lines.append(f"{name:<{width}} {a[name]:>12.2f} {b[name]:>12.2f} {shown:>7}")
    return "\n".join(lines)


def _git(*args: str) -> str:
    return subprocess.run(["git", "-C", str(ROOT), *args], capture_output=True, text=True, check=True).stdout.strip()


def _progress(message: str) -> None:
    print(f"[compare] {message}", file=sys.stderr, flush=True)


def _checkout(rev: str, commit: str, where: Path) -> Path:
    """A detached worktree of ``commit`` at ``where`` with its own ``.venv``; its python."""
    _git("worktree", "add", "--detach", "--quiet", str(where), commit)
    subprocess.run([sys.executable, "-m", "venv", str(where / ".venv")], check=True)
    python = where / ".venv" / "bin" / "python"
    _progress(f"installing {rev} ({commit[:10]}) in {where}")
    subprocess.run([str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check", "-e", f"{where}[test]"],
                   check=True, stdout=subprocess.DEVNULL)
    return python


def run_bench(python: Path, tree: Path, bench: str, bench_args: Sequence[str], out: Path) -> dict[str, float]:
    """One run of ``bench/<bench>.py`` of ``tree`` under ``python``, its --json written to ``out``;
    the figures compared (:func:`figures`)."""
    subprocess.run([str(python), f"bench/{bench}.py", *bench_args, "--json", str(out)], cwd=tree, check=True)
    return figures(bench, json.loads(out.read_text()))


def _run(rev: str, tree: Path, python: Path, args: Args, out: Path) -> dict[str, float]:
    _progress(f"{args.bench} on {rev}")
    return run_bench(python, tree, args.bench, args.bench_args, out)


def main(argv: Sequence[str] | None = None) -> None:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    commits = {rev: _git("rev-parse", "--verify", f"{rev}^{{commit}}") for rev in (args.rev_a, args.rev_b)}
    scratch = Path(tempfile.mkdtemp(prefix="paygate-compare-"))
    trees = {"A": scratch / "a", "B": scratch / "b"}
    revs = {"A": args.rev_a, "B": args.rev_b}
    try:
        pythons = {side: _checkout(revs[side], commits[revs[side]], trees[side]) for side in ("A", "B")}
        if args.same_bench:
            for script in (trees["B"] / "bench").iterdir():
                if script.is_file():
                    shutil.copy2(script, trees["A"] / "bench" / script.name)
        results: dict[str, list[dict[str, float]]] = {"A": [], "B": []}
        for index in range(args.rounds):
            for side in ("A", "B") if index % 2 == 0 else ("B", "A"):
                results[side].append(_run(revs[side], trees[side], pythons[side], args,
                                          scratch / f"{side}-{index}.json"))
    finally:
        for tree in trees.values():
            if tree.exists():
                subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(tree)],
                               capture_output=True, check=False)
        shutil.rmtree(scratch, ignore_errors=True)
        _git("worktree", "prune")
    a, b = mean(results["A"]), mean(results["B"])
    print(f"\n{args.bench}: A = {args.rev_a} ({commits[args.rev_a][:10]}), B = {args.rev_b} "
          f"({commits[args.rev_b][:10]}), {args.rounds} round(s), back to back"
          + (f", bench args: {' '.join(args.bench_args)}" if args.bench_args else "")
          + (", B's bench scripts on both" if args.same_bench else "") + "\n")
    print(render("A", "B", a, b))
    if args.json:
        args.json.write_text(json.dumps({
            "bench": args.bench, "bench_args": list(args.bench_args), "rounds": args.rounds,
            "a": {"rev": args.rev_a, "commit": commits[args.rev_a], "figures": a, "runs": results["A"]},
            "b": {"rev": args.rev_b, "commit": commits[args.rev_b], "figures": b, "runs": results["B"]},
            "ratios": ratios(a, b)}, indent=1) + "\n")


if __name__ == "__main__":
    main()
