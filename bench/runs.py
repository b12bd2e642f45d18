"""Run one benchmark of this tree several times and read each figure at its median
(docs/decisions/0087; bench/README.md, "Several runs of one build").

    python bench/runs.py [--bench notifications|checkout|outbox|recovery] [--runs 5] [--json PATH]
                         [--keep DIR] [-- BENCH ARGS...]

On this shared machine a ratio's two sides both move between runs, so one run is a sample: a target
is read at the median of at least five runs, each against the ceiling measured in it, and
a latency bound must hold in every run. The benchmark runs ``--runs`` times one after the other,
each with ``--json`` and the arguments after ``--`` (e.g. ``-- --certified --mixes unique
--connections 16 --duration 15``). Printed: every figure (named as bench/compare.py names them) in
each run, its median, lowest and highest. ``--json`` writes the runs' figures and those three.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.compare import BENCHES, ROOT, run_bench, split_passed  # noqa: E402


def parse_args(argv: Sequence[str]) -> tuple[argparse.Namespace, list[str]]:
    """The command line; everything after ``--`` goes to the benchmark unchanged."""
    argv, passed = split_passed(argv)
    parser = argparse.ArgumentParser(prog="bench/runs.py", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--bench", choices=BENCHES, default="notifications")
    parser.add_argument("--runs", type=int, default=5, help="how many times the benchmark runs")
    parser.add_argument("--json", type=Path, help="write every run's figures and their medians here")
    parser.add_argument("--keep", type=Path, help="keep each run's own --json in this directory")
    parsed = parser.parse_args(argv)
    if parsed.runs < 1:
        parser.error("--runs must be at least 1")
    if "--json" in passed:
        parser.error("the benchmark's --json is runs.py's own; use runs.py --json")
    return parsed, passed


def summary(runs: Sequence[dict[str, float]]) -> dict[str, dict[str, float]]:
    """Each figure's median, lowest and highest over the runs that have it, in first-seen order."""
    names = dict.fromkeys(name for run in runs for name in run)
    out: dict[str, dict[str, float]] = {}
    for name in names:
        values = [run[name] for run in runs if name in run]
        out[name] = {"median": statistics.median(values), "min": min(values), "max": max(values)}
    return out


def render(runs: Sequence[dict[str, float]], summarised: dict[str, dict[str, float]]) -> str:
    """A table: figure, each run's value, median, lowest, highest."""
    width = max([len(name) for name in summarised] + [6])
    head = " ".join(f"{f'run {index + 1}':>10}" for index in range(len(runs)))
    lines = [f"{'figure':<{width}} {head} {'median':>10} {'min':>10} {'max':>10}"]
    for name, values in summarised.items():
        cells = " ".join(f"{run[name]:>10.2f}" if name in run else f"{'-':>10}" for run in runs)
        lines.append(f"{name:<{width}} {cells} {values['median']:>10.2f} {values['min']:>10.2f} "
                     f"{values['max']:>10.2f}")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> None:
    args, passed = parse_args(sys.argv[1:] if argv is None else argv)
    runs: list[dict[str, float]] = []
    with tempfile.TemporaryDirectory(prefix="paygate-runs-") as scratch:
        kept = args.keep or Path(scratch)
        kept.mkdir(parents=True, exist_ok=True)
        for index in range(args.runs):
            print(f"[runs] {args.bench}, run {index + 1} of {args.runs}", file=sys.stderr, flush=True)
            runs.append(run_bench(Path(sys.executable), ROOT, args.bench, passed,
                                  kept / f"{args.bench}-{index + 1}.json"))
    summarised = summary(runs)
    print(f"\n{args.bench}: {args.runs} run(s) one after the other"
          + (f", bench args: {' '.join(passed)}" if passed else "") + "\n")
    print(render(runs, summarised))
    if args.json:
        args.json.write_text(json.dumps({"bench": args.bench, "bench_args": passed, "runs": runs,
                                         "figures": summarised}, indent=1) + "\n")


if __name__ == "__main__":
    main()
