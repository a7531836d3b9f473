#!/usr/bin/env python3
"""tools/bench/kt_compare.py on a real sweep, checked against Kernel Tuner's own search space.

Imports the committed H100 cache of conv1d_register into a new database, then runs kt_compare.py on it:
1. brute force: the evaluations and simulated seconds until within 1%, 2% and 5% are those of the first
   configurations of Kernel Tuner's own Searchspace (sorted, as its brute force goes) that get there;
2. random_sample, genetic_algorithm and dual_annealing: the same seeds give the same records (bayes_opt runs);
3. a budget of one evaluation: runs that do not get within 1% are recorded as not reaching it, not crashed on;
4. a sweep that is not in the database: tiletune's export error is recorded, and the other sweep still runs.

Usage: python kt_compare_check.py --tiletune PATH --workdir DIR    (a Python with kernel_tuner installed)
Exits non-zero with one message on the first mismatch.
"""

import argparse
import json
import os
import shutil
import sqlite3
import subprocess
import sys

try:
    from kernel_tuner.searchspace import Searchspace
except ImportError as e:  # the ctest needs a Python with kernel_tuner
    print(f"kt_compare_check: kernel_tuner is not importable ({e})", file=sys.stderr)
    sys.exit(2)

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
CACHE = os.path.join(ROOT, "bench", "results", "h100-kt-conv1d_register.json")
SCRIPT = os.path.join(ROOT, "tools", "bench", "kt_compare.py")
sys.path.insert(0, os.path.dirname(SCRIPT))
import kt_compare  # noqa: E402  (the script under test, for its cost rule and restrictions)


class Mismatch(Exception):
    pass


def check(condition, message):
    if not condition:
        raise Mismatch(message)


def make_db(tiletune, workdir):
    db = os.path.join(workdir, "ref.db")
    subprocess.run(
        [tiletune, "import", "--db", db, "--format", "kernel_tuner", CACHE, "--family", "conv1d_register"],
        check=True,
        capture_output=True,
    )
    con = sqlite3.connect(db)
    (sweep_id,) = con.execute("SELECT id FROM sweeps WHERE kind = 'sweep'").fetchone()
    con.close()
    return db, sweep_id


def compare(tiletune, db, workdir, tag, sweeps, strategies, seeds, extra=()):
    out = os.path.join(workdir, tag)
    cmd = [
        sys.executable,
        SCRIPT,
        "--db",
        db,
        "--tiletune",
        tiletune,
        "--seeds",
        str(seeds),
        "--workdir",
        out,
        "--json",
        out + ".json",
        "--markdown",
        out + ".md",
    ]
    cmd += [a for s in sweeps for a in ("--sweep", str(s))] + [
        a for s in strategies for a in ("--strategy", s)
    ]
    proc = subprocess.run(cmd + list(extra), capture_output=True, text=True)
    check(proc.returncode == 0, f"{tag}: kt_compare.py exited {proc.returncode}: {proc.stderr.strip()}")
    with open(out + ".json") as f:
        doc = json.load(f)
    with open(out + ".md") as f:
        return doc, f.read()


def expected_brute_force(cache_path):
    """Walks Kernel Tuner's Searchspace in its own order and counts to each threshold."""
    restrictions, doc = kt_compare._restrictions(cache_path)
    space = Searchspace(doc["tune_params"], restrictions, 1_000_000_000)
    entries = doc["cache"]
    optimum = min(v["time"] for v in entries.values() if "__error__" not in v)
    expected, best, spent = {}, float("inf"), 0.0
    for n, config in enumerate(space.sorted_list(), start=1):  # the order its brute force measures in
        entry = entries[",".join(str(v) for v in config)]
        spent += kt_compare.simulated_ms(entry)
        if "__error__" not in entry:
            best = min(best, entry["time"])
        for t in kt_compare.THRESHOLDS:
            if t not in expected and best <= optimum * (1 + t / 100):
                expected[t] = (n, round(spent / 1000, 3))
    return expected, space.size


def check_brute_force(tiletune, db, sweep_id, workdir):
    doc, table = compare(tiletune, db, workdir, "brute", [sweep_id], ["brute_force"], 1)
    space = doc["spaces"][0]
    expected, size = expected_brute_force(space["cache"])
    check(space["runnable"] == size, f"runnable {space['runnable']} != Kernel Tuner's space size {size}")
    run = space["strategies"]["brute_force"]["runs"][0]
    check("error" not in run, f"brute force failed: {run.get('error')}")
    for t, (n, seconds) in expected.items():
        got = (run[f"evals_to_{t}"], run[f"simulated_s_to_{t}"])
        check(
            got == (n, seconds),
            f"brute force to {t}%: recorded {got}, Kernel Tuner's order gives {(n, seconds)}",
        )
    check(
        "| | | | brute_force | %d [" % expected[1][0] in table,
        "the table lacks the brute-force row:\n" + table,
    )


def strip(run):
    return {k: v for k, v in run.items() if k not in ("wall_s",) and not k.startswith("strategy_s")}


def check_repeatable(tiletune, db, sweep_id, workdir):
    # bayes_opt runs but is not compared: its default method decides when to refit its model from the wall
    # time of its predictions against that of the (simulated, near-instant) evaluations, so a loaded machine
    # can change its path.
    strategies = ["random_sample", "genetic_algorithm", "dual_annealing", "bayes_opt"]
    first, _ = compare(tiletune, db, workdir, "seeded-a", [sweep_id], strategies, 2)
    again, table = compare(tiletune, db, workdir, "seeded-b", [sweep_id], strategies[:-1], 2)
    for s in strategies:
        a = [strip(r) for r in first["spaces"][0]["strategies"][s]["runs"]]
        check(all("error" not in r for r in a), f"{s} failed: {a}")
        if s in again["spaces"][0]["strategies"]:
            b = [strip(r) for r in again["spaces"][0]["strategies"][s]["runs"]]
            check(a == b, f"{s}: the same seeds gave different runs:\n{a}\n{b}")
            check(f"| {s} |" in table, f"the table lacks {s}:\n{table}")


def check_unreached(tiletune, db, sweep_id, workdir):
    doc, table = compare(
        tiletune, db, workdir, "tiny", [sweep_id], ["random_sample"], 8, ["--max-fevals", "1"]
    )
    runs = doc["spaces"][0]["strategies"]["random_sample"]["runs"]
    summary = doc["spaces"][0]["strategies"]["random_sample"]["summary"]["evals_to_1"]
    check(all(r["evaluations"] == 1 and r["evals_to_1"] in (1, None) for r in runs), f"budget of 1: {runs}")
    missed = [r for r in runs if r["evals_to_1"] is None]
    check(missed, "with 8 seeds and one evaluation each, some run should miss 1% (the space has 232)")
    check(
        all(r["stopped"] == "budget" for r in missed),
        f"a missed run is not recorded as out of budget: {missed}",
    )
    check(summary["reached"] == len(runs) - len(missed), f"summary {summary} does not count the missed runs")


def check_export_error(tiletune, db, sweep_id, workdir):
    doc, table = compare(tiletune, db, workdir, "missing", [9999, sweep_id], ["random_sample"], 1)
    bad, good = doc["spaces"]
    check("not in the database" in bad.get("error", ""), f"missing sweep recorded as {bad}")
    check("strategies" in good, "the sweep after a failed export was not searched")
    check("export failed" in table, "the table does not show the failed export:\n" + table)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--tiletune", required=True)
    p.add_argument("--workdir", required=True)
    args = p.parse_args()
    shutil.rmtree(args.workdir, ignore_errors=True)
    os.makedirs(args.workdir)
    db, sweep_id = make_db(args.tiletune, args.workdir)
    try:
        for step in (check_brute_force, check_repeatable, check_unreached, check_export_error):
            step(args.tiletune, db, sweep_id, args.workdir)
    except Mismatch as e:
        print(f"kt_compare_check: {e}", file=sys.stderr)
        return 1
    print("kt_compare_check: 4 passed, 0 failed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
